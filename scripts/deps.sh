#!/bin/sh
# deps.sh - install the Debian packages hugekv needs when they are missing.
# As root: apt-get install. Otherwise: print the exact command and fail.
# HUGEKV_NO_DEPS=1 skips the check.
set -eu
case ${1:-} in -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ "${HUGEKV_NO_DEPS:-0}" = 1 ] && exit 0
PKGS="build-essential pkg-config libnuma-dev numactl libcmocka-dev
libhugetlbfs-dev libhugetlbfs-bin libbpf-dev bpftool clang libclang-rt-14-dev llvm libelf-dev
zlib1g-dev systemtap-sdt-dev bpftrace python3 python3-matplotlib python3-sphinx
python3-numpy python3-torch python3-pytest python3-pip python3-setuptools python3-wheel python3-venv
libucx-dev ucx-utils libssl-dev iproute2 linux-kbuild-6.1 help2man libxxhash-dev
prometheus python3-prometheus-client tmux"
missing=
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $st in *" installed") ;; *) missing="$missing $p" ;; esac
done
[ -z "$missing" ] && exit 0
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing Debian packages:$missing" >&2
	echo "deps.sh: run as root: apt-get update && $cmd" >&2
	exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
