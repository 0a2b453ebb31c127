//! Command-line types (clap derive). Nothing below `cmd/` sees these: each command turns
//! them into its own validated configuration first. This file holds the top level (the
//! parser, `--color`, the subcommands and their help texts); `args` holds each
//! subcommand's options.

mod args;

pub use args::*;
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
    /// Run on every node: capture headers only, analyze continuously, serve Prometheus
    /// metrics, check every network namespace, keep a flight recorder.
    #[command(after_help = AGENT_HELP)]
    Agent(Box<AgentArgs>),
    /// List capture devices (like tcpdump -D) and RDMA devices with their netdevs,
    /// port state, link layer and RoCE GIDs.
    Interfaces(InterfacesArgs),
    /// Print the kernel's QP table (every QP's device, port, local and remote QPN, type,
    /// state, PSNs, pid and command) as the JSON of `rdma res show qp -j`, read over RDMA
    /// netlink: no `rdma` binary needed.
    #[command(after_help = QP_TABLE_HELP)]
    QpTable(QpTableArgs),
    /// Triage NCCL's completion errors (`NET/IB : Got completion from peer ... status=12`):
    /// ranked causes from the log, joined with captures and the hosts' GID tables and routes.
    #[command(after_help = NCCL_HELP)]
    Nccl(NcclArgs),
    /// Collect sFlow v5 from switches: RoCE inside the sampled headers, scaled by the
    /// sampling rate with error bars, per agent and port; datagram loss from sequence numbers.
    #[command(after_help = SFLOW_HELP)]
    Sflow(SflowArgs),
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

const SFLOW_HELP: &str = "Examples:
  rocetap sflow --metrics 0.0.0.0:9471                 # listen on UDP 6343, serve /metrics /report
  rocetap sflow --listen [::]:6343 --duration 60s -F json > sflow.json
  rocetap sflow -r exporter.pcap -F json   # datagrams captured with tcpdump udp port 6343

Counts of sampled packets are estimates: the sum of the sampling rates of the samples,
with the 95% relative error 196 * sqrt(1/samples) % (sFlow's sampling theory). Lost
datagrams are counted from each agent's sequence numbers (late ones are not loss).";

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

const QP_TABLE_HELP: &str = "Examples:
  rocetap qp-table > node-a.json               # this node's QPs, while the job runs
  rocetap analyze trace.pcap --qp-table 198.18.0.1=node-a.json
  rocetap qp-table saved.json                  # check a saved table (exit 2 names the entry)

The output has the keys rdma prints (ifname, port, lqpn, rqpn, type, state, rq-psn,
sq-psn, pid, comm) and is read back by --qp-table FILE. An unreadable table is one line
on stderr and exit 2.";

const NCCL_HELP: &str = "Examples:
  rocetap nccl job.log
  kubectl logs --prefix --timestamps -l job=train | rocetap nccl -
  rocetap nccl job.log --capture node2.pcapng          # the QP, the PSN and the place of the loss
  rocetap nccl job.log --capture tor1.pcap --capture tor2.pcap   # two taps of one path: the segment
  rocetap nccl job.log --agent http://node2:9470   # a node agent's /report, as a capture
  rocetap nccl job.log --sysfs-root node2=/tmp/node2-sys --from node2=state/pod2
  rocetap nccl job.log --format json --fail-on 'status_12 > 0'

Exit codes: 0 no --fail-on rule holds, 1 a rule holds, 2 error (unreadable input, bad rule).";

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

const AGENT_HELP: &str = "Examples:
  rocetap agent -i auto --listen 0.0.0.0:9470
  rocetap agent -i eth1 -i eth2 --dump-dir /var/lib/rocetap/dumps --dump-on 'nak_psn_seq > 10'
  rocetap agent --config /etc/rocetap/agent.yaml --log-format json
  kill -USR1 $(pidof rocetap)      # dump the flight recorder now

Endpoints: /metrics (Prometheus text format), /healthz (200 ok or 503 and why),
/report (the analyze JSON of the last --dump-seconds of the flight recorder).

Rules (--dump-on) use the --fail-on language over the sliding --window: totals keys
count what happened in the window (nak_psn_seq, unrecovered_gap_events, cnp,
arp_cross_subnet_unanswered, ...), derived keys are rates over it (cnp_per_s, ...).
A dump is an annotated pcapng plus its analysis JSON, written whole or not at all.

Signals: SIGTERM/SIGINT stop cleanly (a second one at once); SIGUSR1 dumps.
A bad option or config file is an error at start (exit 2).";

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
