#!/usr/bin/env bash
# make gazebo: the Gazebo image (docker/gazebo/) with podman or docker, no registry:
#   1. the base: Debian 11 with Gazebo 11 and the ROS 1 build tools (docker/gazebo/packages.txt)
#      made here by mmdebstrap from the Debian mirror, imported once and kept, tagged by the hash
#      of the package list (a changed list makes a new base);
#   2. the image on it: the C++ packages of this checkout (sim2real_gazebo,
#      panda_gazebo, compliant_actuator_gazebo) copied into a build context and built by catkin inside; the
#      engine's layer cache rebuilds only when they change.
#   tools/gazebo_image.sh [--tag TAG]      (default localhost/sim2real-gazebo)
# Without podman or a running docker engine, or without mmdebstrap for the base, it says what to
# install and exits 2.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tag="localhost/sim2real-gazebo"
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    *) echo "gazebo_image: error: unknown option $1" >&2; exit 2 ;;
  esac
done
work="$root/build/gazebo"
mkdir -p "$work"
if command -v podman >/dev/null 2>&1; then engine=podman
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then engine=docker
else
  echo "gazebo_image: error: no container engine: install podman (apt-get install podman runc" \
       "uidmap slirp4netns) or start a docker engine" >&2
  exit 2
fi
if [ "$engine" = podman ]; then
  # shellcheck source=tools/podman_conf.sh
  source "$root/tools/podman_conf.sh"
  podman_conf "$work"
fi

packages="$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$root/docker/gazebo/packages.txt" | grep -v '^$' | paste -sd, -)"
base="localhost/sim2real-gazebo-base:$(printf '%s' "$packages" | sha256sum | cut -c1-12)"
if ! "$engine" image inspect "$base" > /dev/null 2>&1; then
  command -v mmdebstrap >/dev/null 2>&1 || {
    echo "gazebo_image: error: the base image needs mmdebstrap: apt-get install mmdebstrap" >&2; exit 2; }
  echo "gazebo_image: making the Debian 11 base with Gazebo 11 (mmdebstrap, ~3 min, once)"
  start=$(date +%s)
  # bullseye-security is left out: the mirror answered 404 for some of its packages
  mmdebstrap --variant=apt --include="$packages" bullseye "$work/base.tar" \
    "deb http://deb.debian.org/debian bullseye main" \
    "deb http://deb.debian.org/debian bullseye-updates main" > "$work/mmdebstrap.log" 2>&1 \
    || { tail -n 20 "$work/mmdebstrap.log"; exit 1; }
  "$engine" import --change 'CMD ["/bin/bash"]' "$work/base.tar" "$base" > /dev/null
  rm -f "$work/base.tar"
  echo "gazebo_image: base $base made in $(( $(date +%s) - start )) s"
fi

# the build context: this checkout's C++ packages for Gazebo (results and tests left out, but
# the example actuator library a user would build), the entrypoint and the Dockerfile
context="$work/context"
rm -rf "$context"
mkdir -p "$context/ws/src"
for pkg in sim2real_gazebo panda_gazebo compliant_actuator_gazebo; do
  mkdir -p "$context/ws/src/$pkg"
  (cd "$root/$pkg" && tar --exclude=results --exclude=test --exclude=__pycache__ -cf - .) \
    | tar -xf - -C "$context/ws/src/$pkg"
done
mkdir -p "$context/ws/src/compliant_actuator_gazebo/test"
cp -r "$root/compliant_actuator_gazebo/test/example_actuator" "$context/ws/src/compliant_actuator_gazebo/test/"
cp "$root/docker/gazebo/entrypoint.sh" "$root/docker/gazebo/Dockerfile" "$root/docker/gazebo/loopback_only.c" \
  "$context/"
echo "gazebo_image: $engine build of $tag on $base"
start=$(date +%s)
"$engine" build --build-arg "BASE=$base" -t "$tag" -f "$context/Dockerfile" "$context" \
  > "$work/build.log" 2>&1 || { tail -n 60 "$work/build.log"; exit 1; }
echo "gazebo_image: $tag built in $(( $(date +%s) - start )) s (log: build/gazebo/build.log)"
