#include "core/file.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace aiter {

bool read_whole_file(const std::string &path, std::string *bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  bool ok = fd >= 0 && ::fstat(fd, &st) == 0;
  if (ok) {
    bytes->assign(size_t(st.st_size > 0 ? st.st_size : 0), '\0');
    size_t done = 0;
    for (;;) {  // to end of file: a file that grew since fstat is read whole too
      if (done == bytes->size()) bytes->resize(done + 4096);
      const ssize_t got = ::read(fd, &(*bytes)[done], bytes->size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ok = got == 0;
        break;
      }
      done += size_t(got);
    }
    bytes->resize(done);
  }
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) bytes->clear(), errno = error;
  return ok;
}

}  // namespace aiter
