#!/bin/sh
# Starts `torchdoctor check --distributed` for one rank of a torchrun job (torchrun --no-python
# sh odd_rank.sh ARGS...). The rank whose RANK equals $ODD_RANK gets the variable $ODD_ENV
# (NAME=VALUE) and/or runs the Python statement $ODD_PY before torchdoctor starts: one rank of a
# job made different, as a node-local profile or sitecustomize would.
if [ "$RANK" = "$ODD_RANK" ]; then
  if [ -n "$ODD_ENV" ]; then export "$ODD_ENV"; fi
  if [ -n "$ODD_PY" ]; then
    exec "$PYTHON" -c "$ODD_PY
import sys
from torchdoctor.cli import main
sys.exit(main(sys.argv[1:]))" check --distributed "$@"
  fi
fi
exec "$PYTHON" -m torchdoctor check --distributed "$@"
