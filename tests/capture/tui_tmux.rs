//! `rocetap top` end to end: the real binary in a detached tmux session of 160×48,
//! driven with `send-keys` and read with `capture-pane`, on a sample replayed with
//! `--speed max`. Checks the flows, the detail of the flow with gaps (its gaps, NAKs and
//! resends), the filter, `w` (a pcapng the decoder reads back), and that `q` exits 0
//! with the alternate screen left (the shell's prompt and output are back).

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

struct Session(String);

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .output();
    }
}

impl Session {
    /// The pid of the rocetap the pane's shell runs.
    fn rocetap_pid(&self) -> String {
        let pane = self.tmux(&["display-message", "-p", "-t", &self.0, "#{pane_pid}"]);
        let out = Command::new("pgrep")
            .args(["-P", pane.trim()])
            .output()
            .expect("pgrep");
        let child = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!child.is_empty(), "rocetap's pid");
        child
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(args).output().expect("run tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn keys(&self, k: &[&str]) {
        let mut a = vec!["send-keys", "-t", &self.0];
        a.extend_from_slice(k);
        self.tmux(&a);
    }
    fn text(&self, t: &str) {
        self.tmux(&["send-keys", "-t", &self.0, "-l", t]);
    }
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.0])
    }
    /// Waits until the screen satisfies `ok`; panics with the screen after `secs`.
    fn wait(&self, what: &str, secs: u64, ok: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                Instant::now() <= end,
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A shell in a new 160×48 tmux session, in a fresh directory, running
/// `rocetap top -r samples/SAMPLE --speed SPEED`.
fn start(test: &str, sample: &str, speed: &str) -> Option<(Session, PathBuf)> {
    start_with(test, sample, speed, "")
}

/// [`start`] with `EXTRA` (shell words) after the other arguments.
fn start_with(test: &str, sample: &str, speed: &str, extra: &str) -> Option<(Session, PathBuf)> {
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(sample);
    start_args(
        test,
        &format!("-r {} --speed {speed} {extra}", sample.display()),
    )
}

/// `rocetap top ARGS` (shell words) in a new tmux session of 160×48.
fn start_args(test: &str, args: &str) -> Option<(Session, PathBuf)> {
    if !have_tmux() {
        common::skip("tmux is not installed");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("rocetap-tui-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!(
        "rocetap-{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let status = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "160",
            "-y",
            "48",
            "-c",
        ])
        .arg(&dir)
        .args([
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
            "TERM=xterm-256color",
            "PS1=READY$ ",
        ])
        .args(["bash", "--norc", "--noprofile"])
        .status()
        .expect("start tmux");
    assert!(status.success());
    let s = Session(name);
    s.wait("the shell", 10, |t| t.contains("READY$"));
    s.text(&format!("{} top {args}; echo EXIT=$?", common::bin()));
    s.keys(&["Enter"]);
    Some((s, dir))
}

/// Quits with `q` and checks the exit status and that the alternate screen was left.
fn quit(s: &Session) {
    s.text("q");
    // The typed command line holds "EXIT=$?" too: wait for the line echo prints.
    let exit_line = |t: &str| t.lines().any(|l| l.starts_with("EXIT="));
    let scr = s.wait("the shell after quitting", 10, exit_line);
    assert!(scr.lines().any(|l| l == "EXIT=0"), "{scr}");
    assert!(
        !scr.contains("rocetap top │"),
        "alternate screen not left:\n{scr}"
    );
    assert!(scr.contains("READY$"), "{scr}");
}

fn frames(screen: &str) -> u64 {
    let i = screen.find("frames ").expect("frames in the header") + 7;
    screen[i..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .expect("a number")
}

#[test]
fn top_congestion_detail_shows_ce_and_cnps() {
    let Some((s, dir)) = start("cnp", "congestion.pcap", "max") else {
        return;
    };
    s.wait("the flows table", 30, |t| {
        t.contains("Flows 8/8") && t.contains("ended")
    });
    // Sorted by problems, the flow with the most CE marks and CNPs comes first.
    s.text("s");
    let scr = s.wait("the sort", 10, |t| t.contains("sort: problems"));
    let first_row = scr
        .lines()
        .find(|l| l.contains("→") && !l.contains("src→dst"))
        .expect("a flow row");
    assert!(
        first_row.contains("198.18.0.1→198.18.0.2 0x000101"),
        "{scr}"
    );
    s.keys(&["Enter"]);
    // The whole detail, not the first lines of a redraw caught half-way (seen under load).
    let scr = s.wait("the detail", 10, |t| {
        t.contains("Flow #0") && t.contains("rate before first CNP")
    });
    assert!(scr.contains("CE 15 · CNP sent 0 received 4"), "{scr}");
    assert!(
        scr.contains("rate before first CNP 74.24 Gb/s · after last CNP 2.76 Gb/s"),
        "{scr}"
    );
    quit(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn top_pause_and_single_step() {
    // 0.000187 s of capture at 1/50000 of its speed: about 9 s of replay.
    let Some((s, dir)) = start("step", "loss-upstream.pcap", "0.00002") else {
        return;
    };
    s.wait("the header", 30, |t| t.contains("rocetap top │"));
    s.text("p");
    let scr = s.wait("the pause", 10, |t| t.contains("PAUSED"));
    let n = frames(&scr);
    assert!(n < 151, "paused before the end: {scr}");
    // While paused nothing moves.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(frames(&s.screen()), n);
    for k in 1..=3 {
        s.text(".");
        s.wait("one more frame", 10, |t| frames(t) == n + k);
    }
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(frames(&s.screen()), n + 3, "a step is one frame");
    quit(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn top_replays_selects_details_writes_and_quits() {
    let Some((s, dir)) = start("loss", "loss-upstream.pcap", "max") else {
        return;
    };
    let scr = s.wait("the flows table", 30, |t| {
        t.contains("Flows 8/8") && t.contains("ended")
    });
    for flow in [
        "198.18.0.1→198.18.0.2 0x000101",
        "198.18.0.1→198.18.0.2 0x000102",
        "203.0.113.6→203.0.113.5 0x002e4b",
        "198.51.100.20→198.51.100.10 0x00a011",
    ] {
        assert!(scr.contains(flow), "{flow} missing:\n{scr}");
    }
    assert!(scr.contains("frames 151"), "{scr}");
    assert!(!scr.lines().any(|l| l.starts_with("EXIT=")), "{scr}");

    // Select the flow with gaps by filtering on its QP, then open it.
    s.text("/0x000102");
    let scr = s.wait("the filter", 10, |t| t.contains("Flows 1/8"));
    assert!(scr.contains("/0x000102"), "{scr}");
    s.keys(&["Enter"]);
    s.keys(&["Enter"]);
    let scr = s.wait("the detail", 10, |t| {
        t.contains("Flow #1") && t.contains("trigger NAK")
    });
    assert!(scr.contains("gaps 2 (2 PSNs missing; 2 recovered"), "{scr}");
    assert!(
        scr.contains("resent 6 packets in 2 episodes: NAK 6"),
        "{scr}"
    );
    assert!(scr.contains("NAK: PSN sequence error"), "{scr}");
    assert!(scr.contains("1 PSNs missing"), "{scr}");
    assert!(scr.contains("3 packets, trigger NAK"), "{scr}");

    // w: the flow and its peer go to a pcapng the decoder reads back.
    s.text("w");
    let scr = s.wait("the write", 10, |t| t.contains("wrote "));
    let file = dir.join("rocetap-flow1.pcapng");
    assert!(scr.contains("wrote 41 frames to"), "{scr}");
    let out = common::rocetap(&["decode", "-q", file.to_str().unwrap()]);
    assert!(out.status.success());
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(lines, 41, "{}", String::from_utf8_lossy(&out.stdout));

    // Esc back to the table, help shows every key, q quits.
    s.keys(&["Escape"]);
    s.wait("the table again", 10, |t| t.contains("Flows 1/8"));
    s.text("?");
    s.wait("the help", 10, |t| t.contains("this help"));
    quit(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A QP table whose process named itself with terminal controls: the flow's detail
/// shows the name escaped, and the pane's title is not set by it.
#[test]
fn top_shows_hostile_qp_table_names_escaped() {
    let table = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qptable/clean-rc-hostile.json");
    let extra = format!("--qp-table {}", table.display());
    let Some((s, dir)) = start_with("hostile", "clean-rc.pcap", "max", &extra) else {
        return;
    };
    let title = s.tmux(&["display-message", "-p", "-t", &s.0, "#{pane_title}"]);
    s.wait("the flows table", 30, |t| t.contains("ended"));
    s.text("/0x000101");
    s.wait("the filter", 10, |t| t.contains("Flows 1/"));
    s.keys(&["Enter"]);
    s.keys(&["Enter"]);
    let scr = s.wait("the detail", 10, |t| t.contains("kernel: sent by"));
    assert!(
        scr.contains(
            "mlx5_0\\x1b[31m QP 0x000201 (RC RTS\\u{9b}2J) pid 31337 \\x1b[2J\\x1b]0;pwned"
        ),
        "{scr}"
    );
    assert_eq!(
        s.tmux(&["display-message", "-p", "-t", &s.0, "#{pane_title}"]),
        title
    );
    quit(&s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Mistakes are one line on stderr and exit 2, before the screen is taken over.
#[test]
fn top_errors_are_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (&["top"], "rocetap: top: no source"),
        (
            &["top", "-r", "/nonexistent/x.pcap"],
            "rocetap: reading /nonexistent/x.pcap:",
        ),
        (
            &["top", "--speed", "0", "-r", "samples/clean-rc.pcap"],
            "rocetap: top: --speed 0:",
        ),
        (
            &["top", "-r", "samples/clean-rc.pcap", "-i", "lo"],
            "rocetap: top: give files (-r) or devices (-i), not both",
        ),
        (
            &["top", "-i", "rocetap-nonexistent0"],
            "rocetap: capturing on rocetap-nonexistent0:",
        ),
        // Output is a pipe here: no terminal to draw on.
        (
            &["top", "-r", "samples/clean-rc.pcap"],
            "rocetap: top: standard input and output must be a terminal",
        ),
        (
            &["top", "--tap", "samples/taps/two-taps.a.pcap"],
            "rocetap: top: --tap needs 2 to 8 taps, 1 given",
        ),
        (
            &[
                "top",
                "-r",
                "samples/clean-rc.pcap",
                "--tap",
                "samples/taps/two-taps.a.pcap",
                "--tap",
                "samples/taps/two-taps.s.pcap",
            ],
            "rocetap: top: give the captures as --tap NAME=FILE only",
        ),
        (
            &["top", "--tap", "samples/clean-rc.pcap@mirrors"],
            "rocetap: top: tap samples/clean-rc.pcap@mirrors: 0 mirror sessions carry RoCE",
        ),
        (
            &[
                "top",
                "--tap",
                "a=/nonexistent/a.pcap",
                "--tap",
                "b=/nonexistent/b.pcap",
            ],
            "rocetap: top: tap b: reading /nonexistent/b.pcap",
        ),
        // The taps merge, then there is no terminal.
        (
            &[
                "top",
                "--tap",
                "samples/taps/mirror-two-sessions.pcap@mirrors",
            ],
            "rocetap: top: standard input and output must be a terminal",
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(common::bin())
            .args(*args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
        assert!(err.lines().count() <= 2, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

fn sh(cmd: &[&str]) -> bool {
    Command::new(cmd[0])
        .args(&cmd[1..])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Two network namespaces joined by a veth pair, removed on drop.
struct Veth {
    a: String,
    b: String,
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = sh(&["ip", "netns", "del", &self.a]);
        let _ = sh(&["ip", "netns", "del", &self.b]);
    }
}

/// Live: `top -i` on a veth in a network namespace while tcpreplay sends a sample into
/// it; the flows appear, no drops are shown, `q` exits 0 (privileges were dropped).
#[test]
fn top_live_on_a_veth() {
    let Some(scr) = live("top", "", "congestion.pcap", |t| {
        t.contains("Flows 8/8") && t.contains("frames 304 ")
    }) else {
        return;
    };
    assert!(scr.contains("198.18.0.1→198.18.0.2 0x000101"), "{scr}");
}

/// A mirror collector's traffic live: with `--filter` for GRE, `top -i` follows the
/// inner RoCE of both ERSPAN sessions of `samples/taps/mirror-two-sessions.pcap`.
#[test]
fn top_live_sees_mirrored_roce_with_a_filter() {
    let Some(scr) = live(
        "mir",
        "--filter 'ip proto 47'",
        "taps/mirror-two-sessions.pcap",
        |t| t.contains("Flows 2/2") && t.contains("frames 1230 "),
    ) else {
        return;
    };
    assert!(scr.contains("192.0.2.1→192.0.2.2 0x000022"), "{scr}");
    assert!(scr.contains("RoCE 1230"), "{scr}");
}

/// `top -i B EXTRA` in namespace b while tcpreplay sends `sample` from namespace a over
/// a veth; the screen once `done` holds (the drops zero, running), after `q`.
fn live(tag: &str, extra: &str, sample: &str, done: impl Fn(&str) -> bool) -> Option<String> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root {
        common::skip("needs root for network namespaces");
        return None;
    }
    if !have_tmux() || !sh(&["tcpreplay", "-V"]) {
        common::skip("tmux or tcpreplay is not installed");
        return None;
    }
    let pid = std::process::id();
    let ns = Veth {
        a: format!("rt{tag}-{pid}-a"),
        b: format!("rt{tag}-{pid}-b"),
    };
    let (ia, ib) = (
        format!("r{tag}{:x}a", pid % 0xfffff),
        format!("r{tag}{:x}b", pid % 0xfffff),
    );
    assert!(sh(&["ip", "netns", "add", &ns.a]));
    assert!(sh(&["ip", "netns", "add", &ns.b]));
    assert!(sh(&[
        "ip", "link", "add", &ia, "netns", &ns.a, "type", "veth", "peer", "name", &ib, "netns",
        &ns.b,
    ]));
    for (n, i) in [(&ns.a, &ia), (&ns.b, &ib)] {
        let _ = sh(&[
            "ip",
            "netns",
            "exec",
            n,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{i}.disable_ipv6=1"),
        ]);
        assert!(sh(&["ip", "-n", n, "link", "set", i, "mtu", "9000"]));
        assert!(sh(&["ip", "-n", n, "link", "set", i, "up"]));
    }
    let name = format!("rocetap-live-{tag}-{pid}");
    assert!(sh(&[
        "tmux",
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "160",
        "-y",
        "48",
        "env",
        "-i",
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        "TERM=xterm-256color",
        "PS1=READY$ ",
        "bash",
        "--norc",
        "--noprofile",
    ]));
    let s = Session(name);
    s.wait("the shell", 10, |t| t.contains("READY$"));
    s.text(&format!(
        "ip netns exec {} {} top -i {ib} {extra}; echo EXIT=$?",
        ns.b,
        common::bin()
    ));
    s.keys(&["Enter"]);
    s.wait("the live header", 30, |t| t.contains(&format!("live {ib}")));
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(sample);
    assert!(sh(&[
        "ip",
        "netns",
        "exec",
        &ns.a,
        "tcpreplay",
        "-q",
        "-i",
        &ia,
        "-t",
        sample.to_str().unwrap(),
    ]));
    let scr = s.wait("the replayed flows", 30, done);
    assert!(scr.contains("drops kernel 0 iface 0 rocetap 0"), "{scr}");
    assert!(scr.contains("running"), "{scr}");
    quit(&s);
    Some(scr)
}

/// `kill -SIG` from outside ends the UI like `q`: exit 0, the alternate screen left and
/// the terminal cooked again (`stty -a` in the pane's shell shows `icanon` and `echo`, not
/// the raw mode's `-icanon -echo`). SIGINT and SIGQUIT once killed `top` with the
/// terminal left raw and on the alternate screen.
fn signal_restores_the_terminal(sig: &str) {
    let Some((s, dir)) = start(
        &format!("sig{}", sig.to_lowercase()),
        "congestion.pcap",
        "max",
    ) else {
        return;
    };
    s.wait("the flows table", 30, |t| t.contains("Flows 8/8"));
    let child = s.rocetap_pid();
    assert!(Command::new("kill")
        .args([&format!("-{sig}"), &child])
        .status()
        .unwrap()
        .success());
    let exit_line = |t: &str| t.lines().any(|l| l.starts_with("EXIT="));
    let scr = s.wait(&format!("the shell after SIG{sig}"), 10, exit_line);
    assert!(scr.lines().any(|l| l == "EXIT=0"), "SIG{sig}:\n{scr}");
    assert!(!scr.contains("rocetap top │"), "SIG{sig}:\n{scr}");
    s.text(
        "printf 'STTY=%s\\n' \"$(stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' ')\"",
    );
    s.keys(&["Enter"]);
    let stty = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("STTY="))
            .map(str::to_string)
    };
    let scr = s.wait(&format!("stty after SIG{sig}"), 10, |t| stty(t).is_some());
    assert_eq!(
        stty(&scr).unwrap().trim_end(),
        "STTY=icanon echo",
        "SIG{sig}: the terminal is not cooked:\n{scr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn top_sigterm_restores_the_terminal() {
    signal_restores_the_terminal("TERM");
}

#[test]
fn top_sigint_restores_the_terminal() {
    signal_restores_the_terminal("INT");
}

#[test]
fn top_sighup_restores_the_terminal() {
    signal_restores_the_terminal("HUP");
}

#[test]
fn top_sigquit_restores_the_terminal() {
    signal_restores_the_terminal("QUIT");
}

/// A terminal that goes away (its tmux session killed) ends `top`: it once kept spinning
/// at 100% CPU inside crossterm's poll on the hung-up terminal, for 40 minutes.
#[test]
fn top_ends_when_its_terminal_goes_away() {
    let Some((s, dir)) = start("hangup", "congestion.pcap", "max") else {
        return;
    };
    s.wait("the flows table", 30, |t| t.contains("Flows 8/8"));
    let child = s.rocetap_pid();
    drop(s); // kills the session: the pane's terminal is gone
    let proc_dir = PathBuf::from(format!("/proc/{child}"));
    let t0 = Instant::now();
    while proc_dir.exists() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let gone = !proc_dir.exists();
    if !gone {
        let _ = Command::new("kill").args(["-9", &child]).status();
    }
    assert!(
        gone,
        "rocetap top {child} still runs 10 s after its terminal went away"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `top --tap`: the first tap replayed, the flows table's `lost at` column and the
/// detail's segments from the merged analysis; with a mirror capture's sessions as taps,
/// the first session's packets alone.
#[test]
fn top_tap_shows_where_the_loss_is() {
    let taps = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples/taps");
    let Some((s, dir)) = start_args(
        "taps",
        &format!(
            "--tap a={} --tap s={} --speed max",
            taps.join("two-taps.a.pcap").display(),
            taps.join("two-taps.s.pcap").display()
        ),
    ) else {
        return;
    };
    let scr = s.wait("the flows table", 30, |t| {
        t.contains("Flows 2/2") && t.contains("ended")
    });
    assert!(scr.contains("lost at"), "{scr}");
    assert!(scr.contains("before a 1, a→s 4, after s 1"), "{scr}");
    assert!(scr.contains("replay taps a, s max"), "{scr}");
    // By name: 192.0.2.1 → 192.0.2.2 first.
    s.text("s");
    s.text("s");
    s.wait("the sort", 10, |t| t.contains("sort: name"));
    s.keys(&["Enter"]);
    let scr = s.wait("the detail", 10, |t| t.contains("delay a→s"));
    assert!(
        scr.contains("a→s: lost 4, NAKs 2, timer retries 1, PSNs 1040,1041,1150,1299"),
        "{scr}"
    );
    quit(&s);
    let _ = std::fs::remove_dir_all(&dir);
    let Some((s, dir)) = start_args(
        "mirror-taps",
        &format!(
            "--tap {}@mirrors --speed max",
            taps.join("mirror-two-sessions.pcap").display()
        ),
    ) else {
        return;
    };
    let scr = s.wait("the flows table", 30, |t| {
        t.contains("Flows 2/2") && t.contains("ended")
    });
    // Session 9 alone: the 617 frames tap a saw, not the stream's 1230.
    assert_eq!(frames(&scr), 617, "{scr}");
    assert!(scr.contains("before erspan-9-in 1"), "{scr}");
    quit(&s);
    let _ = std::fs::remove_dir_all(&dir);
}
