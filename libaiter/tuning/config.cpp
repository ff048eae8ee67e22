// TEMPORARY: replaced by the tuned-table reader (being written).
#include "tuning/config.hpp"

namespace aiter {
int64_t m_bucket(int64_t m) { return m; }
std::string tuned_variant(const TuneKey &) { return ""; }
void note_untuned(const TuneKey &) {}
void log_lookup(const TuneKey &, const char *, const char *) {}
aiter_status reload_tuned_configs() { return AITER_OK; }
std::string tuned_config_sources() { return ""; }
}  // namespace aiter
