//! Command-line types (clap derive). Nothing below `main` sees these: each command turns
//! them into its own validated configuration first.

use clap::{Args, Parser, Subcommand, ValueEnum};
use rocetap::config::{
    DEFAULT_BUFFER_KIB, DEFAULT_QUEUE_BATCHES, DEFAULT_SNAPLEN, ROCE_PORT, SYSFS_ROOT,
};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "rocetap",
    version,
    about = "RoCE v2 packet capture and analyzer",
    long_about = "rocetap decodes and analyzes RoCE (RDMA over Converged Ethernet) traffic: the \
InfiniBand transport headers in UDP/4791, every queue pair's PSNs, NAKs, retransmissions, \
ECN marks and CNPs.",
    after_help = "Examples:\n  rocetap decode samples/clean-rc.pcap\n  rocetap decode -r trace.pcapng --format csv > frames.csv\n  ibdump -w - | rocetap decode -r -\n  rocetap synth loss-upstream -o loss.pcap\n\nExit codes: 0 ok, 1 findings (a --fail-on rule failed), 2 error."
)]
pub struct Cli {
    /// When to color text output (auto: on a terminal, unless NO_COLOR is set).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value_t = ColorWhen::Auto
    )]
    pub color: ColorWhen,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorWhen {
    // No doc comments: they would repeat the option's text under every subcommand's help.
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// `Some(on)` when the choice does not depend on the terminal.
    pub fn forced(self) -> Option<bool> {
        match self {
            ColorWhen::Auto => None,
            ColorWhen::Always => Some(true),
            ColorWhen::Never => Some(false),
        }
    }
}

impl Cli {
    /// Parses the command line; usage errors end the process (exit 2), as clap does. clap's
    /// own help and error messages follow `--color` too: it is looked for before parsing.
    pub fn parse_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        let color = match early_color(std::env::args_os().skip(1)) {
            Some(ColorWhen::Always) => clap::ColorChoice::Always,
            Some(ColorWhen::Never) => clap::ColorChoice::Never,
            _ => clap::ColorChoice::Auto,
        };
        let parsed = Cli::command()
            .color(color)
            .try_get_matches()
            .and_then(|m| Cli::from_arg_matches(&m));
        match parsed {
            Ok(cli) => cli,
            Err(e) => {
                use clap::error::ErrorKind;
                if matches!(
                    e.kind(),
                    ErrorKind::DisplayHelp
                        | ErrorKind::DisplayVersion
                        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                ) {
                    e.exit();
                }
                let (what, hint) = one_line(&e.render().to_string());
                eprintln!("rocetap: {what}");
                if let Some(h) = hint {
                    eprintln!("hint: {h}");
                }
                std::process::exit(rocetap::error::exit::ERROR);
            }
        }
    }

    /// Whether our own text output gets color (a plain bool for the layers below).
    pub fn color_on(&self) -> bool {
        use std::io::IsTerminal;
        rocetap::report::style::decide(
            self.color.forced(),
            std::io::stdout().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        )
    }
}

/// A clap usage error in the shape of every other error: one line of what is wrong, and
/// one hint line (the possible values, clap's tip, or the usage).
fn one_line(rendered: &str) -> (String, Option<String>) {
    let mut lines = rendered.lines().map(str::trim_end);
    let first = lines.next().unwrap_or("bad arguments");
    let mut what = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let mut hints = Vec::new();
    let mut usage = None;
    let mut listing = what.ends_with(':');
    for l in lines {
        let t = l.trim();
        if t.is_empty() {
            listing = false;
        } else if listing {
            // "the following required arguments were not provided:" and its list
            what.push_str(if what.ends_with(':') { " " } else { ", " });
            what.push_str(t);
        } else if let Some(u) = t.strip_prefix("Usage: ") {
            usage = Some(format!("usage: {u}"));
        } else if t.starts_with("For more information") {
        } else {
            let t = t.strip_prefix("tip: ").unwrap_or(t);
            hints.push(t.trim_start_matches('[').trim_end_matches(']').to_string());
        }
    }
    let hint = if hints.is_empty() {
        usage
    } else {
        Some(hints.join("; "))
    };
    (what, hint)
}

/// The `--color` value on a command line, before clap has parsed it (last one wins).
fn early_color(args: impl Iterator<Item = std::ffi::OsString>) -> Option<ColorWhen> {
    let mut found = None;
    let mut next_is_value = false;
    for a in args {
        let a = a.to_string_lossy().into_owned();
        let value = if next_is_value {
            next_is_value = false;
            Some(a.as_str())
        } else if a == "--" {
            break;
        } else if a == "--color" {
            next_is_value = true;
            None
        } else {
            a.strip_prefix("--color=")
        };
        if let Some(v) = value {
            found = ColorWhen::from_str(v, false).ok();
        }
    }
    found
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode every frame: one summary line each, or every field as CSV / JSON.
    #[command(
        after_help = "Examples:\n  rocetap decode trace.pcap\n  rocetap decode -v -c 3 trace.pcap   # every field of each frame, like tshark -V\n  rocetap decode trace.pcap --format csv | head\n  tcpdump -w - -i eth0 udp port 4791 | rocetap decode -r -\n\nCSV columns and JSON keys use Wireshark field names (infiniband.bth.psn, ...)."
    )]
    Decode(DecodeArgs),
    /// Write a synthetic trace of a RoCE scenario, with its ground truth beside it.
    #[command(
        after_help = "Examples:\n  rocetap synth --list\n  rocetap synth loss-upstream -o loss.pcap\n  rocetap synth clean-rc --packets 2000000 --snaplen 128 -o big.pcap\n  rocetap synth many-qp --qps 8192 --peers 128 --packets 1000000 -s 128 -o q.pcap\n\nAlso writes FILE.truth.json: what an analyzer watching this tap can know (NAKs, gaps,\nretransmissions, CE marks, CNPs, ...). The same arguments give byte-identical files."
    )]
    Synth(SynthArgs),
    /// Check a network namespace's routing for multi-homed RDMA pods (sbr, ARP source,
    /// rp_filter) and RoCE readiness; answer `ip route get` questions offline.
    #[command(
        after_help = "Examples:\n  rocetap netcheck --netns sbrarp-pod1\n  rocetap netcheck --pid 4242 --format json\n  rocetap netcheck --from state/pod1            # addr.json route.json rule.json [sysctl.json]\n  rocetap netcheck --from state/pod1 --route-get '198.19.8.1 from 198.18.1.5'\n  rocetap netcheck --capture pod-eth0.pcap --capture pod-net1.pcap   # capture-side ARP symptoms\n  rocetap netcheck --from state/pod1 --capture pod.pcap              # both\n  rocetap netcheck --nad k8s/nads/*.yaml --sriov-policy k8s/policies/*.yaml --nodes nodes.yaml\n  kubectl get net-attach-def -A -o json | rocetap netcheck --nad - --fail-on-severity error\n\nCollect a pod's state anywhere with:\n  kubectl exec POD -- ip -j addr > addr.json   (and ip -j route show table all, ip -j rule)\n\nExit codes: 0 no problems, 1 findings (errors or warnings; see --fail-on-severity), 2 error."
    )]
    Netcheck(NetcheckArgs),
    /// Follow every queue pair and report gaps, retransmissions, NAKs, ECN/CNP, PFC, ARP.
    #[command(
        after_help = "Examples:\n  rocetap analyze trace.pcap\n  rocetap analyze -v trace.pcap     # each finding with its flows and events\n  rocetap analyze trace.pcap --format json --events > report.json\n  rocetap analyze trace.pcap --fail-on 'nak_psn_seq > 0' --fail-on 'cnp_per_s > 5000'\n\nRULE is NAME OP NUMBER with OP one of > >= < <= == != and NAME a totals key\n(nak_psn_seq, psn_gap_events, unrecovered_gap_events, retransmitted_packets,\narp_cross_subnet_unanswered, arp_reply_path_mismatch, ...)\nor a derived one (cnp_per_s, ce_per_s, nak_per_s, naks, retransmit_ratio, ce_ratio,\nduration_s). The run fails (exit 1) when a rule's condition is true; a malformed
rule or an unknown name is an error (exit 2).\n\nSeveral files are merged into one capture in timestamp order."
    )]
    Analyze(AnalyzeArgs),
    /// Capture live traffic to pcap / pcapng, headless (like tcpdump -w), with rotation
    /// and honest drop accounting.
    #[command(after_help = CAPTURE_HELP)]
    Capture(CaptureArgs),
    /// Interactive terminal UI over a replayed capture or live devices: flows, their
    /// trouble, events, a detail view per flow.
    #[command(after_help = TOP_HELP)]
    Top(TopArgs),
    /// List capture devices (like tcpdump -D) and RDMA devices with their netdevs,
    /// port state, link layer and RoCE GIDs.
    Interfaces(InterfacesArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    #[command(after_help = COMPLETIONS_HELP)]
    Completions(CompletionsArgs),
    /// Write the man pages, rocetap(1) and one per subcommand (rocetap-analyze(1), ...),
    /// into a directory.
    #[command(
        after_help = "Examples:\n  rocetap man --out-dir /usr/local/share/man/man1\n  rocetap man --out-dir man && man -l man/rocetap-analyze.1"
    )]
    Man(ManArgs),
}

const COMPLETIONS_HELP: &str = "Examples:
  rocetap completions bash > ~/.local/share/bash-completion/completions/rocetap
  rocetap completions zsh > ~/.zfunc/_rocetap     # with fpath+=(~/.zfunc) before compinit
  rocetap completions fish > ~/.config/fish/completions/rocetap.fish";

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// Directory to write rocetap.1 and rocetap-SUBCOMMAND.1 into (created if missing).
    #[arg(long, value_name = "DIR", required = true)]
    pub out_dir: PathBuf,
}

const CAPTURE_HELP: &str = "Examples:
  sudo rocetap capture -i eth2 -w roce.pcapng
  sudo rocetap capture -i eth2 -i eth3 -w both.pcapng --annotate -c 100000
  sudo rocetap capture -i any -w ring.pcap -C 100 -W 10 --headers-only
  sudo rocetap capture -i eth2 -w all.pcap --all 'not port 22'

FILE NAMES
  no rotation: FILE.  -C MB: FILE, FILE1, FILE2, ... (the number is appended to the
  whole name, like tcpdump); with -W N they form a ring: after FILE<N-1> comes FILE again.
  -G SECONDS: FILE.<unix seconds when the file was opened> (plus -<k> when -C opens
  another file within the same second); with -W N only the newest N files are kept.

Stopping: -c, --duration, or SIGINT / SIGTERM (the file is flushed and valid; exit 0).
SIGUSR1 prints the counters. On exit a report says how many frames were received,
written, and dropped by the kernel, the interface and rocetap itself (queue full).
Privileges: needs CAP_NET_RAW. Once the devices are open rocetap drops privileges:
under sudo it becomes SUDO_UID/SUDO_GID (files then belong to you), otherwise it clears
every capability.
RDMA devices (mlx5_0) need a libpcap built with RDMA support (not Debian/Ubuntu's); the
RDMA sniffer never reports drops, so such captures carry a note saying so.";

const TOP_HELP: &str = "Examples:
  rocetap top -r trace.pcap                 # replay at the recorded speed
  rocetap top -r trace.pcap --speed max     # as fast as possible
  rocetap top -r a.pcap -r b.pcap --speed 0.1
  sudo rocetap top -i eth2

Keys: q quit, arrows/j k move, Enter detail, Esc back, s sort, / filter, p pause,
. step (replay), w write the selected flow to rocetap-flow<ID>.pcapng, e events, ? help.
The terminal must be at least 80x24.
Live capture needs CAP_NET_RAW; rocetap drops privileges once the devices are open.
w writes the newest frames kept for the flow and its peer (up to 2048 frames / 2 MiB
per direction).";

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
    /// Root of sysfs, where RDMA devices and their hw_counters are looked up.
    #[arg(long, value_name = "DIR", default_value = SYSFS_ROOT, hide = true)]
    pub sysfs_root: PathBuf,
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
        conflicts_with_all = ["netns", "pid", "capture", "route_get", "sysfs_root"]
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
    /// or not.
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
    /// or not.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_color_finds_the_last_value_before_a_double_dash() {
        let args = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let f = |v: &[&str]| early_color(args(v).into_iter());
        assert_eq!(f(&["--color", "never", "decode"]), Some(ColorWhen::Never));
        assert_eq!(
            f(&["decode", "--color=always", "x"]),
            Some(ColorWhen::Always)
        );
        assert_eq!(
            f(&["--color=never", "--color", "always"]),
            Some(ColorWhen::Always)
        );
        assert_eq!(f(&["capture", "--", "--color", "never"]), None);
        assert_eq!(f(&["--color", "sometimes"]), None);
        assert_eq!(f(&["decode"]), None);
    }

    #[test]
    fn usage_errors_become_one_line_and_a_hint() {
        let (w, h) = one_line(
            "error: invalid value 'x' for '--color <WHEN>'\n  [possible values: auto, always, never]\n\nFor more information, try '--help'.\n",
        );
        assert_eq!(w, "invalid value 'x' for '--color <WHEN>'");
        assert_eq!(h.as_deref(), Some("possible values: auto, always, never"));
        let (w, h) = one_line(
            "error: the following required arguments were not provided:\n  --out-dir <DIR>\n\nUsage: rocetap man --out-dir <DIR>\n\nFor more information, try '--help'.\n",
        );
        assert_eq!(
            w,
            "the following required arguments were not provided: --out-dir <DIR>"
        );
        assert_eq!(h.as_deref(), Some("usage: rocetap man --out-dir <DIR>"));
    }
}
