# Shared by with-hosts, on-host and netns-ssh (sourced, not run).
# Instance N owns: the lock dir $TASKWIRE_HOSTS_RUN/N, network namespaces twNh1..twNhK (each
# with a veth twNhIb on the bridge side, eth0 inside), the bridge twbrN, /etc/netns/twNhI/ and
# the subnet 198.18.N.0/24 (host I is .I, the bridge .254). Nothing else is ever touched.

TASKWIRE_HOSTS_RUN=${TASKWIRE_HOSTS_RUN:-/run/taskwire-hosts}

hosts_die() {
  echo "$(basename "$0"): $*" >&2
  exit 2
}

# hosts_netns N HOST: the network namespace of HOST (h1, h2, ... or its 198.18.N.I address).
hosts_netns() {
  local n=$1 host=$2
  case $host in
    h[0-9]*) ;;
    "198.18.$n."[0-9]*) host=h${host##*.} ;;
    *) hosts_die "unknown host '$host' (expected h1, h2, ... of instance $n)" ;;
  esac
  [ -e "/run/netns/tw${n}${host}" ] || hosts_die "no host '$host' in instance $n"
  echo "tw${n}${host}"
}

# hosts_exec N HOST COMMAND...: exec COMMAND inside HOST: its network namespace (with its
# /etc/hosts, bound by `ip netns exec`) and a UTS namespace of its own named HOST.
hosts_exec() {
  local n=$1 host=$2 ns
  shift 2
  ns=$(hosts_netns "$n" "$host") || exit 2
  case $host in "198.18."*) host=h${host##*.} ;; esac
  exec ip netns exec "$ns" unshare --uts -- sh -c 'hostname "$1" && shift && exec "$@"' \
    sh "$host" "$@"
}

# hosts_instance: the instance number from the environment set by with-hosts.
hosts_instance() {
  case ${TASKWIRE_HOSTS_INSTANCE:-} in
    ''|*[!0-9]*) hosts_die "TASKWIRE_HOSTS_INSTANCE is not set: run under tests/hosts/with-hosts" ;;
  esac
  echo "$TASKWIRE_HOSTS_INSTANCE"
}
