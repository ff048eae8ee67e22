"""copy_tree.py SRC DST: DST becomes an exact copy of the folder SRC (files
removed from SRC disappear from DST too).  Used by meson for <build>/configs."""
import shutil
import sys

src, dst = sys.argv[1:3]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
