#!/bin/sh
# The compiler launcher of the header checks: each header's unit is only parsed and checked
# (-fsyntax-only: it makes no code), and its object file is an empty stamp for the build. The
# precompiled header itself is made as usual.
out=
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
case "$out" in
  *.pch | *.gch) exec "$@" ;;
esac
"$@" -fsyntax-only || exit
[ -z "$out" ] || : > "$out"
