#!/usr/bin/env bash
# make docker: build the robot PC image with docker or podman, whichever is present.
#   tools/docker_build.sh [--base IMAGE] [--tag TAG] [--franky-wheel FILE]
# With podman, the build gets this host's package access: its pip settings (find-links, extra
# index URLs, certificate; from `pip config list` and PIP_* variables), the folders they name and
# the CA bundle are mounted read-only into the build and passed as build arguments. Nothing of
# the host is stored in the image or committed. (docker's builder cannot mount host folders: on a
# machine with internet access none is needed.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="debian:bookworm"; tag="localhost/sim2real-robot"; wheel=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --franky-wheel) wheel="$2"; shift 2 ;;
    *) echo "docker_build: error: unknown option $1" >&2; exit 2 ;;
  esac
done
if command -v podman >/dev/null 2>&1; then engine=podman
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then engine=docker
else echo "docker_build: error: neither podman nor a running docker engine is installed" >&2; exit 2
fi

args=(--build-arg "BASE=$base" --build-arg "FRANKY_WHEEL=$wheel" -t "$tag" -f "$root/docker/Dockerfile")
if [ "$engine" = podman ]; then
  pip_setting() {  # the host's value of a pip setting: PIP_* variable first, then pip's config
    local env_name="$1" key="$2" value
    value="$(printenv "$env_name" || true)"
    [ -n "$value" ] || value="$(python3 -m pip config list 2>/dev/null \
      | sed -n "s/^[a-z:.]*${key}='\(.*\)'$/\1/p" | head -n 1)"
    printf '%s' "$value"
  }
  find_links="$(pip_setting PIP_FIND_LINKS find-links)"
  extra_index="$(pip_setting PIP_EXTRA_INDEX_URL extra-index-url)"
  cert="$(pip_setting PIP_CERT cert)"
  args+=(--network host --build-arg "PIP_FIND_LINKS=$find_links"
         --build-arg "PIP_EXTRA_INDEX_URL=$extra_index" --build-arg "PIP_CERT=$cert")
  for path in $find_links $extra_index $cert; do
    path="${path#file://}"
    path="${path%/simple}"          # a file index's pages point at files beside "simple"
    case "$path" in /*) [ -e "$path" ] && args+=(--volume "$path:$path:ro") ;; esac
  done
fi
echo "docker_build: $engine build of $tag on $base"
"$engine" build "${args[@]}" "$root"
