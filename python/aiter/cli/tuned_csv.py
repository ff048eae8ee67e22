"""The tuned CSV a tuning run writes: the library's table format (configs/README.md)
plus the measurements behind each choice.  Writing merges with the rows already
in the file: rows of other keys stay, rows of the same key are replaced."""
import csv
import os

# topk: the fused MoE's experts a token (0 for GEMMs; absent from older files).
KEY = ["op", "target", "compute_units", "batch", "m", "n", "k", "a_dtype", "out_dtype", "topk"]
COLUMNS = KEY + ["variant", "us", "tflops", "error"]
_NUMERIC = ("compute_units", "batch", "m", "n", "k", "topk")


def row_key(row):
    return tuple(str(row[c]) for c in KEY)


def read_rows(path):
    """key -> row (a dict of COLUMNS) of an existing tuned CSV; {} when there is none.
    Columns other than COLUMNS are dropped."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f if line.strip() and not line.lstrip().startswith("#")]
    rows = {}
    for row in csv.DictReader(lines):
        row["topk"] = (row.get("topk") or "").strip() or "0"
        rows[row_key(row)] = {c: (row.get(c) or "").strip() for c in COLUMNS}
    return rows


def _order(row):
    return tuple(int(row[c]) if c in _NUMERIC else str(row[c]) for c in
                 ("op", "target", "compute_units", "batch", "topk", "n", "k", "a_dtype", "out_dtype", "m"))


def merge_rows(path, new_rows):
    """Writes `path` with its old rows and `new_rows` (dicts of COLUMNS), the new
    replacing old ones of the same key; rows sorted by op, shape and M."""
    rows = read_rows(path)
    for row in new_rows:
        rows[row_key(row)] = {c: str(row[c]) for c in COLUMNS}
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(sorted(rows.values(), key=_order))
