#!/bin/sh
# Installs Debian packages the build needs, or says how to when we may not.
set -e
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing from Debian: $*"
    apt-get update -qq >/dev/null 2>&1 || true  # stale lists still serve an install
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    echo "installing from Debian (sudo): $*"
    sudo apt-get update -qq >/dev/null 2>&1 || true
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
else
    echo "missing: $*. Install them (Debian: apt-get install $*) and run make again." >&2
    exit 1
fi
