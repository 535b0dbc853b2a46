#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu).
# Put this folder's files in the autograder zip: setup.sh, run_autograder, points.json (optional),
# and attn-trace's wheel or source if the image cannot reach PyPI.
set -euo pipefail
apt-get update -qq
# bubblewrap gives each student's code a PID namespace and a read-only file system (docs/check.md, Isolation)
apt-get install -y -qq python3 python3-pip python3-venv bubblewrap
python3 -m venv /opt/attn-trace
/opt/attn-trace/bin/pip install --quiet attn-trace
