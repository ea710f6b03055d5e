#!/usr/bin/env bash
# Makes `import tailor` work after a build: writes tailor.pth (one line, the
# absolute path of BUILD_DIR/python, where the build puts the tailor package)
# into the user site-packages of the Python the module was built for (CMake's
# Python_EXECUTABLE; Python reads every .pth there at start-up, as for
# `pip install --user`). Run by `make` after each build. Says so and does
# nothing else when the module was not built (no pybind11-dev / python3-dev)
# or that Python has no user site-packages (a venv): PYTHONPATH=BUILD_DIR/python
# works then.
#   scripts/python-path.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
dir="$(cd "$build" && pwd)/python"
if ! compgen -G "$dir/tailor/_tailor*.so" >/dev/null; then
  echo "python: the tailor module was not built (needs pybind11-dev python3-dev): skipped"
  exit 0
fi
py=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
py=${py:-python3}
if ! site=$("$py" -c 'import site, sys
if not site.ENABLE_USER_SITE: sys.exit(1)
print(site.getusersitepackages())' 2>/dev/null); then
  echo "python: $py has no user site-packages: use PYTHONPATH=$dir"
  exit 0
fi
pth="$site/tailor.pth"
if [ "$(cat "$pth" 2>/dev/null)" != "$dir" ]; then
  if ! { mkdir -p "$site" && printf '%s\n' "$dir" > "$pth.tmp.$$" && mv "$pth.tmp.$$" "$pth"; } \
    2>/dev/null; then
    rm -f "$pth.tmp.$$" 2>/dev/null || true
    echo "python: cannot write $pth: use PYTHONPATH=$dir"
    exit 0
  fi
fi
echo "python: \`import tailor\` loads $dir/tailor ($pth; $py)"
