#!/usr/bin/env bash
# CI stage: the README's set-up on a clean Debian 12. A bookworm root made anew on every run (so nothing cached
# can stand in for a package) gets only what scripts/install-deps.sh installs, then configures the way
# `make configure` does and builds the libraries and one example. A package missing from install-deps.sh fails
# here. The host's ccache directory is shared with the root, which has the same compiler packages and the source
# at the same absolute path, so the host's `make test` build afterwards reuses these compiles. Needs root.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

# What this stage needs on the host.
missing=()
for p in mmdebstrap ccache; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
ccache_dir=$(ccache -k cache_dir)
mkdir -p "$ccache_dir"

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/clean-root.XXXXXX")
root=$tmp/root
mounts() { findmnt -rn -o TARGET | grep "^$tmp/" | sort -r || true; }
cleanup() {
  # Unmount everything below the root, deepest first, before deleting it: one of the mounts is the host's
  # ccache directory, which must not be deleted with the root.
  mounts | while read -r m; do umount "$m" || umount -l "$m"; done
  if [ -n "$(mounts)" ]; then
    echo "clean-root: mounts remain below $tmp; not deleting it" >&2
  else
    rm -rf "$tmp"
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

step() {  # step NAME COMMAND: runs COMMAND in the root, in the source tree; stops the stage naming NAME on failure
  local name=$1 start=$SECONDS
  echo "clean-root: $name"
  if ! chroot "$root" env -i -C "$src" HOME=/root LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
       CCACHE_DIR="$ccache_dir" bash -euo pipefail -c "$2"; then
    echo "clean-root stage FAILED: $name, in a clean Debian 12 root with only what scripts/install-deps.sh" \
         "installs (is a package missing from it?)" >&2
    exit 1
  fi
  echo "clean-root: $name: $((SECONDS - start)) s"
}

# The host's apt sources; mmdebstrap takes deb.debian.org when there are none.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -s "$f" ] && sources+=("$f")
done
start=$SECONDS
mmdebstrap --mode=root --variant=apt bookworm "$root" "${sources[@]}"
echo "clean-root: root created: $((SECONDS - start)) s"

cp -L /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
mkdir -p "$root$ccache_dir" "$root$src"
mount --bind "$ccache_dir" "$root$ccache_dir"
# The clone's files (tracked, and untracked but not ignored), without its build directories.
git -C "$src" ls-files -z --cached --others --exclude-standard | tar -C "$src" --null -T - -cf - | tar -C "$root$src" -xf -

step "scripts/install-deps.sh" "bash scripts/install-deps.sh"
# Needed by the tests and `make demo`, not by the build.
step "mpirun and the Fashion-MNIST data" \
  "command -v mpirun && test -s /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
# Qt and MPI are AUTO by default and would quietly turn off if their packages were missing; here they must be found.
step "cmake configure" "make configure CMAKE_FLAGS='-DTOWER_BUILD_GUI=ON -DTOWER_WITH_MPI=ON'"
step "build (libraries, fashion_mnist_convnet)" "cmake --build build -j \$(nproc) --target fashion_mnist_convnet"
