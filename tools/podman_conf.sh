# Sourced by tools/docker_test.sh and tools/gazebo_image.sh: `podman_conf DIR` writes podman's
# settings for this kind of VM to DIR/containers.conf and exports CONTAINERS_CONF: runc (crun
# cannot handle the hybrid cgroups) and rlimit defaults at most the host's own (no
# CAP_SYS_RESOURCE).
podman_conf() {
  mkdir -p "$1"
  cat > "$1/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=32768:32768"]
[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF="$1/containers.conf"
}
