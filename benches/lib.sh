# Shared by the live benchmarks (sourced, not run): a veth pair between two network
# namespaces, and the trafgen config of a small RoCE trace.

# veth_pair NS_A IF_A ADDR_A NS_B IF_B ADDR_B: makes both namespaces and a veth between
# them (MTU 9000, no IPv6, addresses given with their prefix, loopback up on both sides).
veth_pair() {
    ip netns add "$1"
    ip netns add "$4"
    ip link add "$2" netns "$1" type veth peer name "$5" netns "$4"
    local side
    for side in "$1 $2 $3" "$4 $5 $6"; do
        set -- $side
        ip netns exec "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
        ip -n "$1" link set "$2" mtu 9000
        ip -n "$1" addr add "$3" dev "$2"
        ip -n "$1" link set "$2" up
        ip -n "$1" link set lo up
    done
}

# trafgen_config ROCETAP DIR SCRIPT: DIR/t.pcap, a `rocetap synth many-qp` trace (64 QPs
# over 4 peers, 256-byte RDMA WRITEs and their ACKs, 2,048 frames), and DIR/t.cfg, the
# trafgen config netsniff-ng makes of it; exits 2 (SCRIPT named) when there is none.
trafgen_config() {
    "$1" synth many-qp --qps 64 --peers 4 --msg-size 256 --packets 2048 -o "$2/t.pcap" > /dev/null
    netsniff-ng --in "$2/t.pcap" --out "$2/t.cfg" -s > /dev/null 2>&1
    [ -s "$2/t.cfg" ] || { echo "$3: netsniff-ng made no trafgen config" >&2; exit 2; }
}

# netns_cleanup NS_A NS_B DIR [PID...]: stops the processes given (empty ones skipped),
# deletes both namespaces and DIR; for the scripts' exit traps.
netns_cleanup() {
    _a=$1 _b=$2 _dir=$3
    shift 3
    for _pid in "$@"; do
        [ -n "$_pid" ] && kill "$_pid" 2> /dev/null || true
    done
    ip netns del "$_a" 2> /dev/null || true
    ip netns del "$_b" 2> /dev/null || true
    rm -rf "$_dir"
}

# needs_root_and SCRIPT HINT COMMAND...: exits 2 with a one-line error unless run as root
# with every COMMAND on the PATH (HINT says how to install them).
needs_root_and() {
    _script=$1 _hint=$2
    shift 2
    [ "$(id -u)" = 0 ] || { echo "$_script: needs root (network namespaces)" >&2; exit 2; }
    for _t in "$@"; do
        command -v "$_t" > /dev/null || { echo "$_script: needs $_t ($_hint)" >&2; exit 2; }
    done
}
