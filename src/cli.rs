//! Command-line types (clap derive). Nothing below `main` sees these: each command turns
//! them into its own validated configuration first.

use clap::{Args, Parser, Subcommand, ValueEnum};
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
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Decode every frame: one summary line each, or every field as CSV / JSON.
    #[command(
        after_help = "Examples:\n  rocetap decode trace.pcap\n  rocetap decode trace.pcap --format csv | head\n  tcpdump -w - -i eth0 udp port 4791 | rocetap decode -r -\n\nCSV columns and JSON keys use Wireshark field names (infiniband.bth.psn, ...)."
    )]
    Decode(DecodeArgs),
    /// Write a synthetic trace of a RoCE scenario, with its ground truth beside it.
    #[command(
        after_help = "Examples:\n  rocetap synth --list\n  rocetap synth loss-upstream -o loss.pcap\n  rocetap synth clean-rc --packets 2000000 --snaplen 128 -o big.pcap\n\nAlso writes FILE.truth.json: what an analyzer watching this tap can know (NAKs, gaps,\nretransmissions, CE marks, CNPs, ...). The same arguments give byte-identical files."
    )]
    Synth(SynthArgs),
    /// Check a network namespace's routing for multi-homed RDMA pods (sbr, ARP source,
    /// rp_filter) and RoCE readiness; answer `ip route get` questions offline.
    #[command(
        after_help = "Examples:\n  rocetap netcheck --netns sbrarp-pod1\n  rocetap netcheck --pid 4242 --format json\n  rocetap netcheck --from state/pod1            # addr.json route.json rule.json [sysctl.json]\n  rocetap netcheck --from state/pod1 --route-get '198.19.8.1 from 198.18.1.5'\n  rocetap netcheck --capture pod-eth0.pcap --capture pod-net1.pcap   # capture-side ARP symptoms\n  rocetap netcheck --from state/pod1 --capture pod.pcap              # both\n\nCollect a pod's state anywhere with:\n  kubectl exec POD -- ip -j addr > addr.json   (and ip -j route show table all, ip -j rule)\n\nExit codes: 0 no problems, 1 findings (errors or warnings), 2 error."
    )]
    Netcheck(NetcheckArgs),
    /// Follow every queue pair and report gaps, retransmissions, NAKs, ECN/CNP, PFC, ARP.
    #[command(
        after_help = "Examples:\n  rocetap analyze trace.pcap\n  rocetap analyze trace.pcap --format json --events > report.json\n  rocetap analyze trace.pcap --fail-on 'nak_psn_seq == 0' --fail-on 'cnp_per_s < 1000'\n\nRULE is NAME OP NUMBER with OP one of > >= < <= == != and NAME a totals key\n(nak_psn_seq, psn_gap_events, unrecovered_gap_events, retransmitted_packets,\narp_cross_subnet_unanswered, arp_reply_path_mismatch, ...)\nor a derived one (cnp_per_s, ce_per_s, nak_per_s, naks, retransmit_ratio, ce_ratio,\nduration_s). A rule states what must hold: exit 1 when one does not.\n\nSeveral files are merged into one capture in timestamp order."
    )]
    Analyze(AnalyzeArgs),
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
    #[arg(long, value_name = "PORT", default_value_t = 4791)]
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
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Root under which sys/class/infiniband and sys/class/net are read (default / when
    /// live; offline only when given).
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
    /// A rule that must hold, e.g. 'nak_psn_seq == 0'; exit 1 when one fails. Repeatable.
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
    /// Benchmarking: stop each frame after reading it or after decoding it, to see
    /// where the time goes (the report then only counts frames).
    #[arg(long, value_enum, hide = true)]
    pub stop_after: Option<Stage>,
    /// No progress indication on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}
