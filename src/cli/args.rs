//! Each subcommand's options (clap derive), and the option groups several share
//! ([`Sources`], [`DecodeOpts`]). Defaults come from `rocetap::config`.

use clap::{Args, ValueEnum};
use rocetap::config::{
    DEFAULT_BUFFER_KIB, DEFAULT_QUEUE_BATCHES, DEFAULT_SNAPLEN, ROCE_PORT, SYSFS_ROOT,
};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TopArgs {
    #[command(flatten)]
    pub sources: Sources,
    /// Capture live from this device (netdev, `any`, or RDMA device). Repeatable.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// Replay speed: realtime (the recorded speed), a multiple such as 0.5 or 10, or max.
    #[arg(long, value_name = "SPEED", default_value = "realtime")]
    pub speed: String,
    /// UDP destination port that carries RoCE v2.
    #[arg(long, value_name = "PORT", default_value_t = ROCE_PORT)]
    pub roce_port: u16,
    /// Do not put the interface into promiscuous mode.
    #[arg(short = 'p', long)]
    pub no_promisc: bool,
    /// The kernel's QP table names the QPs, pids and commands behind the selected flow in
    /// its detail view: `live` (RDMA netlink) or `[ADDR=]FILE` (`rdma res show qp -j`).
    /// Repeatable.
    #[arg(long = "qp-table", value_name = "FILE|live")]
    pub qp_table: Vec<PathBuf>,
    /// Root of sysfs, where RDMA devices and their hw_counters are looked up.
    #[arg(long, value_name = "DIR", default_value = SYSFS_ROOT, hide = true)]
    pub sysfs_root: PathBuf,
    /// Captures of the same traffic at several points of the path, as `analyze --tap`
    /// takes them (2 to 8, path order; FILE@erspan:ID or FILE@mirrors for mirror
    /// sessions): the first tap is replayed, and the flows table shows where each flow's
    /// packets were lost (`lost at`), from the merged analysis of the whole captures.
    #[arg(long = "tap", value_name = "[NAME=]FILE", conflicts_with_all = ["interfaces"])]
    pub taps: Vec<String>,
    /// With --tap: the taps' clocks are synchronised (PTP): one-way delays too.
    #[arg(long, requires = "taps")]
    pub clocks_synced: bool,
    /// With --tap: how long after its first sighting a packet is judged (seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 0.1, requires = "taps")]
    pub tap_window: f64,
    /// With -i: capture filter (BPF). Default: RoCE v2, RoCE v1, ARP and PFC, VLAN-tagged
    /// or not, and switch mirrors (GRE / ERSPAN, VXLAN 4789, Geneve 6081).
    #[arg(long, value_name = "EXPR", requires = "interfaces")]
    pub filter: Option<String>,
}

/// Where frames come from: files (or stdin with `-`).
#[derive(Args, Debug, Clone)]
pub struct Sources {
    /// Read a pcap or pcapng file; `-` reads standard input. Repeatable.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// Files to read (same as -r).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

impl Sources {
    pub fn all(&self) -> Vec<PathBuf> {
        self.read.iter().chain(self.files.iter()).cloned().collect()
    }
}

/// Options every decoding command shares.
#[derive(Args, Debug, Clone)]
pub struct DecodeOpts {
    /// UDP destination port that carries RoCE v2.
    #[arg(long, value_name = "PORT", default_value_t = ROCE_PORT)]
    pub roce_port: u16,
    /// Do not compute the ICRC (faster; the status column says "absent").
    #[arg(long)]
    pub no_icrc: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeFormat {
    Text,
    Csv,
    Json,
}

#[derive(Args, Debug)]
pub struct DecodeArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub opts: DecodeOpts,
    /// Output format.
    #[arg(long, short = 'F', value_enum, default_value_t = DecodeFormat::Text)]
    pub format: DecodeFormat,
    /// Stop after this many frames.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Text format: under each summary line, every decoded field of the frame, one per
    /// line with its Wireshark field name (like tshark -V).
    #[arg(short, long)]
    pub verbose: bool,
    /// No progress indication on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Scenario to generate (see --list).
    #[arg(value_name = "SCENARIO", required_unless_present = "list")]
    pub scenario: Option<String>,
    /// Output capture file; the truth goes to FILE.truth.json.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        required_unless_present = "list"
    )]
    pub output: Option<PathBuf>,
    /// Seed of the generator: the same seed gives the same bytes.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Approximate number of frames (the scenario repeats its message rounds).
    #[arg(long, value_name = "N")]
    pub packets: Option<u64>,
    /// Cut every frame to N bytes in the file (at least 128; lengths and ICRCs stay those
    /// of the full frames).
    #[arg(short = 's', long, value_name = "N")]
    pub snaplen: Option<u32>,
    /// Write pcapng (with per-packet comments on the interesting frames) instead of pcap.
    #[arg(long)]
    pub pcapng: bool,
    /// many-qp: number of queue pairs (RC connections) [default: 64].
    #[arg(long, value_name = "N")]
    pub qps: Option<u32>,
    /// many-qp: number of peers the QPs are spread over (1: between two hosts) [default: 4].
    #[arg(long, value_name = "M")]
    pub peers: Option<u32>,
    /// many-qp: per mille of multi-packet messages that lose a packet before the tap
    /// (NAK, go-back-N) [default: 0].
    #[arg(long, value_name = "PERMILLE")]
    pub loss: Option<u32>,
    /// many-qp: bytes per RDMA WRITE (above 4096: several PMTU-sized packets) [default: 64].
    #[arg(long, value_name = "BYTES")]
    pub msg_size: Option<u32>,
    /// Overwrite FILE and FILE.truth.json if they exist.
    #[arg(long)]
    pub force: bool,
    /// List the scenarios, one line each.
    #[arg(long, conflicts_with_all = ["scenario", "output"])]
    pub list: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetcheckFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct NetcheckArgs {
    /// Read the live state of the named network namespace (/run/netns/NAME).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["pid", "from"])]
    pub netns: Option<String>,
    /// Read the live state of the network namespace of process PID.
    #[arg(long, value_name = "PID", conflicts_with = "from")]
    pub pid: Option<u32>,
    /// Read a saved state: DIR/addr.json, route.json, rule.json, sysctl.json (`ip -j` output).
    /// With --nad: node facts, one node per DIR (or per subdirectory of DIR). Repeatable
    /// with --nad only.
    #[arg(long, value_name = "DIR")]
    pub from: Vec<PathBuf>,
    /// Where sysfs is: class/infiniband and class/net are read under DIR (default /sys
    /// when live; offline only when given). A DIR holding sys/class (such as /) means DIR/sys.
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// Recorded DCB state of the RoCE netdevs: DIR/IF.mlnx_qos (`mlnx_qos -i IF`),
    /// IF.dcb-app (`dcb app show dev IF`), IF.dcb-apptrust, IF.dcb-pfc (`dcb pfc show dev
    /// IF`), each where present: the trust mode, DSCP -> priority map and PFC priorities
    /// the QoS checks (and `--capture`) join with.
    #[arg(long, value_name = "DIR")]
    pub qos_from: Option<PathBuf>,
    /// Another node's sysfs (as --sysfs-root): its GID tables are compared with this
    /// host's, index by index (a job pinning NCCL_IB_GID_INDEX needs the same RoCE v2
    /// IPv4 GID index everywhere). Repeatable.
    #[arg(long, value_name = "DIR")]
    pub peer_sysfs_root: Vec<PathBuf>,
    /// Only answer routing questions, in the words of `ip route get`
    /// (`DST [from SRC] [iif DEV] [oif DEV] [mark N]`). Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub route_get: Vec<String>,
    /// Also (or only) read these captures, merged in time order (one interface per file),
    /// and report their ARP / reply-path symptoms: cross-subnet ARP nobody answers, replies
    /// leaving another interface than the requests came in on, duplicate addresses.
    /// Repeatable. Alone, no namespace state is read.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub capture: Vec<PathBuf>,
    /// Output format.
    #[arg(long, short = 'F', value_enum, default_value_t = NetcheckFormat::Text)]
    pub format: NetcheckFormat,
    /// Text format: the effect of every interface sysctl, also of those at their default.
    #[arg(short, long)]
    pub verbose: bool,
    /// Lint NetworkAttachmentDefinitions instead of checking a namespace: YAML or JSON,
    /// several documents, List kinds (`kubectl get net-attach-def -A -o json`), `-` for
    /// standard input. Repeatable.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 1..,
        conflicts_with_all = ["netns", "pid", "capture", "route_get", "sysfs_root", "qos_from", "peer_sysfs_root"]
    )]
    pub nad: Vec<PathBuf>,
    /// With --nad: SriovNetworkNodePolicy objects (same formats), to follow each NAD's
    /// resource to its PFs, VF count and MTU. Repeatable.
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "nad")]
    pub sriov_policy: Vec<PathBuf>,
    /// With --nad: the nodes' PF addresses and MTUs, YAML or JSON:
    /// `nodes: {NODE: {PF: {address: A.B.C.D/LEN, mtu: N, gateway: G, routes: [CIDR]}}}`.
    #[arg(long, value_name = "FILE", requires = "nad")]
    pub nodes: Option<PathBuf>,
    /// With --nad: directory of the CNI plugins; its sbr is run (no shell, empty
    /// environment, 5 s timeout) to learn the installed version.
    #[arg(long, value_name = "DIR", requires = "nad")]
    pub cni_bin_dir: Option<PathBuf>,
    /// With --nad: the installed sbr plugin's version, when not read from --cni-bin-dir.
    #[arg(
        long,
        value_name = "X.Y.Z",
        requires = "nad",
        conflicts_with = "cni_bin_dir"
    )]
    pub sbr_version: Option<String>,
    /// Exit 1 when a finding is at least this severe (default: warning).
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on_severity: Option<FailOnSeverity>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOnSeverity {
    Error,
    Warning,
    Info,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnalyzeFormat {
    Text,
    Json,
    Csv,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Read,
    Decode,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub opts: DecodeOpts,
    /// Output format: a summary for people, or JSON / CSV (one row per flow).
    #[arg(long, short = 'F', value_enum, default_value_t = AnalyzeFormat::Text)]
    pub format: AnalyzeFormat,
    /// Also list the events (gaps, NAKs, retransmission runs, ...).
    #[arg(long)]
    pub events: bool,
    /// Fail (exit 1) when this condition is true, e.g. 'nak_psn_seq > 0' or
    /// 'cnp_per_s > 5000'; NAME is a key of "totals" or "derived". Repeatable.
    #[arg(long = "fail-on", value_name = "RULE")]
    pub fail_on: Vec<String>,
    /// Seconds of capture time after which an idle flow is summarised and forgotten.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub idle_timeout: f64,
    /// Finished flows whose summaries the report keeps; more still count in the totals.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub max_flows: usize,
    /// Link speed in Gb/s, to turn PFC pause quanta into time.
    #[arg(long, value_name = "GBPS", default_value_t = 100.0)]
    pub link_speed: f64,
    /// Analyze live traffic from this device instead of files (a netdev, `any`, or an
    /// RDMA device such as mlx5_0); repeatable, merged by timestamp. Needs CAP_NET_RAW.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// With -i: also write the captured frames to FILE (pcapng when it ends in .pcapng).
    #[arg(
        short = 'w',
        long = "write",
        value_name = "FILE",
        requires = "interfaces"
    )]
    pub write: Option<PathBuf>,
    /// With -i -w: replace FILE if it exists.
    #[arg(long, requires = "write")]
    pub force: bool,
    /// With -i: stop after N frames (otherwise at --duration or Ctrl-C).
    #[arg(short = 'c', long = "count", value_name = "N", requires = "interfaces")]
    pub count: Option<u64>,
    /// With -i: stop after this many seconds.
    #[arg(long, value_name = "SECONDS", requires = "interfaces")]
    pub duration: Option<f64>,
    /// With -i: bytes kept per frame (default whole frames; 128 keeps every RoCE header).
    #[arg(
        short = 's',
        long,
        value_name = "SNAPLEN",
        default_value_t = DEFAULT_SNAPLEN,
        requires = "interfaces"
    )]
    pub snaplen: u32,
    /// With -i: capture filter (BPF). Default: RoCE v2, RoCE v1, ARP and PFC, VLAN-tagged
    /// or not, and switch mirrors (GRE / ERSPAN, VXLAN 4789, Geneve 6081).
    #[arg(long, value_name = "EXPR", requires = "interfaces")]
    pub filter: Option<String>,
    /// Benchmarking: stop each frame after reading it or after decoding it, to see
    /// where the time goes (the report then only counts frames).
    #[arg(long, value_enum, hide = true)]
    pub stop_after: Option<Stage>,
    /// Text format: under each finding, its evidence: every flow it concerns with its
    /// count, and the events behind it.
    #[arg(short, long)]
    pub verbose: bool,
    /// No progress indication on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// The kernel's QP table, to label flows with the process that owns each QP: a file
    /// of `rdma res show qp -j` (or `-d -j`) taken on a node (the node is the file's
    /// name), as ADDR=FILE with the node's IP address (needed when nodes number their
    /// QPs alike, as rxe does), or `live` to read this node's over RDMA netlink.
    /// Repeatable.
    #[arg(long = "qp-table", value_name = "[ADDR=]FILE|live")]
    pub qp_table: Vec<PathBuf>,
    /// Captures of the same traffic at several points of the path, merged to say where
    /// each lost packet was lost: NAME=FILE (NAME defaults to the file's stem), 2 to 8,
    /// in path order from the host that sends first. The rest of the report is the
    /// first tap's. FILE@erspan:ID (gre:KEY, vxlan:VNI, geneve:VNI; ,in ,out ,port=N
    /// ,from=ADDR) is one mirror session of a collector's capture; FILE@mirrors makes
    /// every session a tap, in the order they saw the first packet.
    #[arg(long = "tap", value_name = "[NAME=]FILE[@SESSION]", conflicts_with_all = ["interfaces"])]
    pub taps: Vec<String>,
    /// With --tap: the taps' clocks are synchronised (PTP), so one-way delays between
    /// taps are reported too (otherwise only their variation above the minimum).
    #[arg(long, requires = "taps")]
    pub clocks_synced: bool,
    /// With --tap: how long after its first sighting a packet is judged (seconds); an
    /// eighth of it must cover the taps' clock drift over the capture.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.1, requires = "taps")]
    pub tap_window: f64,
    /// Threads for reading files: 1 reads, decodes and analyzes on one thread; 2 or more
    /// read and decode on a thread of their own while another analyzes (more than 2 are
    /// not used yet). Default: 2 when 1.5 cores or more run no other task, else 1.
    /// The report is the same byte for byte whatever N. Not with -i.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        conflicts_with = "interfaces"
    )]
    pub jobs: Option<u32>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic pcap, microsecond timestamps (what tcpdump writes).
    Pcap,
    /// Classic pcap, nanosecond timestamps.
    PcapNs,
    /// pcapng, nanosecond timestamps, one interface block per -i, packet comments.
    Pcapng,
}

#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// Capture from this device: a netdev, `any`, or an RDMA device (`mlx5_0`,
    /// `mlx5_0:2`). Repeatable; frames of several devices are merged by timestamp.
    #[arg(short = 'i', long = "interface", value_name = "IFACE", required = true)]
    pub interfaces: Vec<String>,
    /// Write frames to this file (see FILE NAMES below for rotation).
    #[arg(short = 'w', long = "write", value_name = "FILE", required = true)]
    pub write: Option<PathBuf>,
    /// Bytes kept per frame (0 means the default, whole frames).
    #[arg(short = 's', long, value_name = "SNAPLEN", default_value_t = DEFAULT_SNAPLEN)]
    pub snaplen: u32,
    /// Keep only the first 128 bytes of each frame: every RoCE header (Ethernet, two VLAN
    /// tags, IPv6 or GRH, UDP, BTH and the longest extended-header chain), no payload.
    #[arg(long, conflicts_with = "snaplen")]
    pub headers_only: bool,
    /// Stop after writing this many frames.
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Start a new file when the current one would exceed MB million bytes.
    #[arg(short = 'C', value_name = "MB")]
    pub rotate_mb: Option<f64>,
    /// Start a new file every SECONDS seconds.
    #[arg(short = 'G', value_name = "SECONDS")]
    pub rotate_secs: Option<u64>,
    /// Keep at most N files (a ring; needs -C or -G).
    #[arg(short = 'W', value_name = "N")]
    pub ring: Option<u32>,
    /// Output format; by default pcapng when FILE ends in .pcapng, else pcap.
    #[arg(long, value_enum)]
    pub format: Option<CaptureFormat>,
    /// Add a comment to notable RoCE frames (NAK, RNR NAK, CNP, ECN CE, bad ICRC, PSN
    /// gap) that Wireshark shows; pcapng only.
    #[arg(long)]
    pub annotate: bool,
    /// Capture everything (no default RoCE filter).
    #[arg(long)]
    pub all: bool,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
    /// Kernel capture buffer in KiB.
    #[arg(
        short = 'B',
        long = "buffer-size",
        value_name = "KiB",
        default_value_t = DEFAULT_BUFFER_KIB
    )]
    pub buffer_kib: u32,
    /// libpcap immediate mode: lower latency, but on Linux a ring of only
    /// buffer / snaplen frames (drops in bursts unless -s is small).
    #[arg(long)]
    pub immediate: bool,
    /// Read each interface with N handles (1-64), each on its own thread, joined in a
    /// Linux PACKET_FANOUT group that gives every RoCE v2 host pair (both directions of
    /// its QPs) to one of them and everything else to the first; frames are merged back
    /// in timestamp order. Network interfaces only, not RDMA devices.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub lanes: u16,
    /// Do not put the interface into promiscuous mode.
    #[arg(short = 'p', long = "no-promiscuous-mode")]
    pub no_promisc: bool,
    /// UDP destination port of RoCE v2 for the default filter.
    #[arg(long, value_name = "PORT", default_value_t = ROCE_PORT)]
    pub roce_port: u16,
    /// No status line and no final report.
    #[arg(short, long)]
    pub quiet: bool,
    /// Root of sysfs, where RDMA devices are looked up.
    #[arg(long, value_name = "DIR", default_value = SYSFS_ROOT, hide = true)]
    pub sysfs_root: PathBuf,
    /// Batches (of up to 256 frames) queued between capture and writer before frames are dropped.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_QUEUE_BATCHES, hide = true)]
    pub queue: usize,
    /// Capture filter (BPF, as tcpdump). Default: RoCE v2 (udp dst port 4791), RoCE v1
    /// (ether proto 0x8915), ARP and MAC control / PFC (ether proto 0x8808), VLAN-tagged
    /// or not, and switch mirrors (GRE / ERSPAN, VXLAN 4789, Geneve 6081).
    #[arg(
        value_name = "FILTER",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub filter: Vec<String>,
}

#[derive(Args, Debug)]
pub struct InterfacesArgs {
    /// Root of sysfs, where RDMA devices are looked up (for tests and containers).
    #[arg(long, value_name = "DIR", default_value = SYSFS_ROOT)]
    pub sysfs_root: PathBuf,
}

#[derive(Args, Debug)]
pub struct QpTableArgs {
    /// `live`: this node's table, read over RDMA netlink; or FILE: a saved table (the
    /// JSON of `rdma res show qp -j`), checked as `analyze --qp-table` checks it.
    #[arg(value_name = "FILE|live", default_value = "live")]
    pub source: PathBuf,
}

#[derive(Args, Debug, Default)]
pub struct AgentArgs {
    /// Capture from this device: a netdev or mirror port, an RDMA device (`mlx5_0`) when
    /// this libpcap has the RDMA sniffer, or `auto` (the node's RDMA devices, else their
    /// netdevs). Repeatable.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// A YAML file of these options (keys with `_` for `-`, e.g. `dump_on: [...]`); the
    /// command line wins over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve /metrics, /healthz and /report here [default: 127.0.0.1:9470].
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// The `node` label of every metric [default: the host name].
    #[arg(long, value_name = "NAME")]
    pub node_name: Option<String>,
    /// Bytes kept per frame [default: 128, every RoCE header and no payload].
    #[arg(short = 's', long, value_name = "SNAPLEN")]
    pub snaplen: Option<u32>,
    /// Read and analyze each interface in N lanes (1-64), each on its own thread and core:
    /// a Linux PACKET_FANOUT group gives every RoCE v2 host pair (both directions of its
    /// QPs) to one lane, everything else to the first; the metrics add the lanes up.
    /// Network interfaces only, not RDMA devices [default: 1].
    #[arg(long, value_name = "N")]
    pub lanes: Option<u16>,
    /// Capture filter (BPF) instead of the RoCE/ARP/PFC default.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// UDP destination port of RoCE v2 [default: 4791].
    #[arg(long, value_name = "PORT")]
    pub roce_port: Option<u16>,
    /// Run netcheck on every network namespace this often; `0` turns it off [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub netcheck_interval: Option<String>,
    /// Only check this namespace (`host`, a /run/netns name, `pid:PID`). Repeatable.
    #[arg(long = "netcheck-netns", value_name = "NAME")]
    pub netcheck_netns: Vec<String>,
    /// Recorded `dcb app/apptrust/pfc show` or `mlnx_qos` outputs for the QoS checks (as
    /// `netcheck --qos-from`).
    #[arg(long, value_name = "DIR")]
    pub qos_from: Option<PathBuf>,
    /// The kernel's QP table labels the flows of /report and of dumps: `live` (RDMA
    /// netlink, read again each time) or `[ADDR=]FILE` (`rdma res show qp -j`). Repeatable.
    #[arg(long = "qp-table", value_name = "FILE|live")]
    pub qp_table: Vec<String>,
    /// Write flight-recorder dumps (annotated pcapng + analysis JSON) here.
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// Dump when this rule holds over the window (`--fail-on` language, e.g.
    /// 'nak_psn_seq > 10'). Repeatable.
    #[arg(long = "dump-on", value_name = "RULE")]
    pub dump_on: Vec<String>,
    /// Seconds of frames a dump holds, and /report analyzes [default: 60].
    #[arg(long, value_name = "SECONDS")]
    pub dump_seconds: Option<u64>,
    /// Least time between two dumps a rule asks for [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub dump_interval: Option<String>,
    /// Dumps kept in the directory, the oldest removed [default: 20].
    #[arg(long, value_name = "N")]
    pub dump_keep: Option<usize>,
    /// Flight recorder size per source [default: 32M].
    #[arg(long, value_name = "SIZE")]
    pub recorder_bytes: Option<String>,
    /// Flight recorder age limit in seconds [default: 120].
    #[arg(long, value_name = "SECONDS")]
    pub recorder_seconds: Option<u64>,
    /// Mask RDMA addresses, rkeys and atomic operands in the flight recorder, dumps and
    /// /report: `on` or `off` [default: on].
    #[arg(long, value_name = "on|off")]
    pub redact: Option<String>,
    /// Memory for the whole agent, shared by every source's recorder, analyzer and
    /// capture buffers; a full part drops (and counts) instead of growing [default: 192M].
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// The sliding window rules and the event log judge by [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// Log lines as text or one JSON object each [default: text].
    #[arg(long, value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Connections with their own metric series per source [default: 20].
    #[arg(long, value_name = "N")]
    pub top_flows: Option<usize>,
    /// A flow with no packet for this long is summarised and forgotten [default: 60s].
    #[arg(long, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// A PSN gap still open this long counts as unrecovered, while its flow lives
    /// [default: 30s].
    #[arg(long, value_name = "DURATION")]
    pub gap_timeout: Option<String>,
    /// Link speed for PFC pause time, Gbit/s [default: 100].
    #[arg(long, value_name = "GBPS")]
    pub link_speed: Option<f64>,
    /// Stop after this long (default: run until SIGTERM).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// TLS and basic auth for the HTTP endpoints: a YAML file in the Prometheus exporter
    /// toolkit's format (`tls_server_config`, `basic_auth_users`), as node_exporter takes.
    #[arg(long, value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
    /// HTTP connections served at once; more are refused at once [default: 64].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Serve /report (every flow's addresses, QPNs and PSNs): `on` or `off` (then 404)
    /// [default: on].
    #[arg(long, value_name = "on|off")]
    pub report: Option<String>,
    /// Peer address pairs with metric series of their own per source; the rest count in
    /// peer="other" [default: 256].
    #[arg(long, value_name = "N")]
    pub max_peers: Option<usize>,
    /// IP prefix -> node, ToR, rail, switch names (YAML or JSON): labels of the per-peer
    /// series.
    #[arg(long, value_name = "FILE")]
    pub topology: Option<PathBuf>,
    /// Root of sysfs, where RDMA devices are looked up.
    #[arg(long, value_name = "DIR", default_value = SYSFS_ROOT, hide = true)]
    pub sysfs_root: PathBuf,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcclFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct NcclArgs {
    /// NCCL logs (NCCL_DEBUG=INFO or WARN output, `kubectl logs` with or without
    /// --prefix / --timestamps), and the example profiler plugin's trace files (their
    /// QPNs); `-` reads standard input.
    #[arg(value_name = "LOG", required = true)]
    pub logs: Vec<PathBuf>,
    /// Captures to join the errors with (the connection between the error's GIDs, its
    /// QP, PSN and the place of the loss). Several taps of one path, in path order, also
    /// say between which two the loss was. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub capture: Vec<PathBuf>,
    /// A node agent's `/report` to join the errors with, as a capture:
    /// `http://[USER:PASS@]HOST:PORT[/PATH]`, or a saved report FILE (what `curl -s
    /// https://NODE:9470/report` wrote). Repeatable.
    #[arg(long, value_name = "URL|FILE")]
    pub agent: Vec<String>,
    /// A node's sysfs: the GID table of each HCA the log uses is checked at the GID
    /// index NCCL used. `HOST=DIR` applies it to that log host only. Repeatable.
    #[arg(long, value_name = "[HOST=]DIR")]
    pub sysfs_root: Vec<String>,
    /// A pod's recorded routing state (DIR/addr.json, route.json, rule.json, as for
    /// `netcheck --from`): the route from each error's local address to its peer is
    /// looked up. `HOST=DIR` applies it to that log host only. Repeatable.
    #[arg(long, value_name = "[HOST=]DIR")]
    pub from: Vec<String>,
    /// The priority the fabric's PFC protects: NCCL_IB_TC values on another one are
    /// reported.
    #[arg(long, value_name = "PRIO", default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..8))]
    pub lossless_priority: u8,
    /// Output format.
    #[arg(long, short = 'F', value_enum, default_value_t = NcclFormat::Text)]
    pub format: NcclFormat,
    /// Fail (exit 1) when a rule holds: NAME OP NUMBER, NAME one of errors, status_N,
    /// config_mistakes, matched, unmatched, unparsed_errors, host_problems, processes,
    /// hosts. Repeatable.
    #[arg(long, value_name = "RULE")]
    pub fail_on: Vec<String>,
    /// Text format: every cause with its next commands, and each error's input line.
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Args, Debug)]
pub struct SflowArgs {
    /// Receive sFlow datagrams on this UDP address [default: 0.0.0.0:6343; [::]:6343
    /// receives both families where the host allows it].
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "read")]
    pub listen: Option<String>,
    /// Read the sFlow datagrams of a capture (pcap / pcapng of the exporter's UDP stream,
    /// `-` for stdin) instead of listening. Repeatable.
    #[arg(short = 'r', long = "read", value_name = "FILE")]
    pub read: Vec<PathBuf>,
    /// With -r: the UDP destination port of the datagrams in the capture.
    #[arg(long, value_name = "N", default_value_t = 6343)]
    pub sflow_port: u16,
    /// Serve /metrics (Prometheus text) and /report (JSON) here while listening.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Output format of the report at the end: text, or JSON (rocetap.sflow/1).
    #[arg(long, short = 'F', value_enum, default_value_t = NetcheckFormat::Text)]
    pub format: NetcheckFormat,
    /// Stop listening after this long (`30s`, `5m`, `1h`).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Stop after this many datagrams.
    #[arg(short = 'c', long, value_name = "N")]
    pub count: Option<u64>,
    /// Agents (address, sub-agent) followed by name; datagrams of more go to `other`.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_agents: usize,
    /// Ports (data sources) followed by name per agent; samples of more go to `other`.
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_ports: usize,
    /// QP pairs kept per port (the top by samples).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top_qps: usize,
    /// UDP destination port that carries RoCE v2 inside the sampled headers.
    #[arg(long, value_name = "PORT", default_value_t = ROCE_PORT)]
    pub roce_port: u16,
    /// No progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}
