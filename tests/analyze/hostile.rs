//! Hostile input costs little: every input surface of every command, given the worst input
//! of up to 10 MB this project knows for it, is refused with a one-line error (or read and
//! reported) within 256 MiB of memory and 10 s. Each case runs the real binary under
//! `/usr/bin/time` (peak RSS, wall time) inside `timeout` and an 8 GiB address-space limit,
//! so that a hang or a blow-up fails the test instead of the machine.
//! `cargo test --test analyze hostile:: -- --nocapture` prints the table.

use crate::common;

use common::{bin, sample, skip};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The budget the issue sets for any input of up to 10 MB.
const RSS_LIMIT_KIB: u64 = 256 * 1024;
const WALL_LIMIT_S: f64 = 10.0;
const INPUT_LIMIT: u64 = 10 * 1024 * 1024;

/// What a case's exit must be.
#[derive(Clone, Copy, Debug)]
enum Exit {
    /// Refused: exit 2 with exactly one line on stderr.
    Refused,
    /// Read and reported: any of these codes (0 clean, 1 findings).
    Reported(&'static [i32]),
}

struct Case {
    name: &'static str,
    args: Vec<String>,
    exit: Exit,
    /// The inputs it reads (their sizes are checked against the 10 MB bound).
    inputs: Vec<PathBuf>,
    /// Words its stdout or stderr must contain (the file or thing it refused).
    says: Option<&'static str>,
}

struct Outcome {
    code: Option<i32>,
    /// None when the run was killed at the time-out (time wrote nothing).
    rss_kib: Option<u64>,
    wall_s: Option<f64>,
    stdout_bytes: usize,
    stdout: String,
    stderr: String,
}

fn run(case: &Case, n: usize, dir: &Path) -> Outcome {
    let stats = dir.join(format!("case-{n}.time"));
    let out = Command::new("timeout")
        .args(["-s", "KILL", "60", "prlimit", "--as=8589934592", "--"])
        .args(["/usr/bin/time", "-f", "%M %e", "-o"])
        .arg(&stats)
        .arg(exe())
        .args(&case.args)
        .stdin(Stdio::null())
        .output()
        .expect("run timeout /usr/bin/time rocetap");
    let text = std::fs::read_to_string(&stats).unwrap_or_default();
    // On a non-zero exit GNU time writes "Command exited with non-zero status N" first.
    let last = text.lines().last().unwrap_or("");
    let mut it = last.split_whitespace();
    let rss_kib = it.next().and_then(|v| v.parse().ok());
    let wall_s = it.next().and_then(|v| v.parse().ok());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // time's own lines are in its -o file, not in stderr; a killed run has no exit code.
    let code = if out.status.code() == Some(137) {
        None
    } else {
        out.status.code()
    };
    Outcome {
        code,
        rss_kib,
        wall_s,
        stdout_bytes: out.stdout.len(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// The binary under test: this build's, or `ROCETAP_HOSTILE_BIN` (to measure another build,
/// such as the one before a change).
fn exe() -> String {
    std::env::var("ROCETAP_HOSTILE_BIN").unwrap_or_else(|_| bin().to_string())
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

// ---- generators: each input is at most 10 MB ----

/// `kubectl get net-attach-def -A -o json` with `n` NADs that all hand out one range.
fn nads_sharing_one_range(n: usize) -> String {
    let mut items = Vec::with_capacity(n);
    for i in 0..n {
        let config = format!(
            r#"{{"cniVersion":"0.3.1","name":"rail{i}","plugins":[{{"type":"sriov","ipam":{{"type":"whereabouts","range":"198.18.0.0/16"}}}},{{"type":"sbr"}}]}}"#
        );
        items.push(serde_json::json!({
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": format!("rail{i}"), "namespace": "training"},
            "spec": {"config": config},
        }));
    }
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
}

/// A billion-laughs document: ten levels of ten aliases each.
fn yaml_alias_bomb() -> String {
    let mut y = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        let _ = writeln!(
            y,
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]"
        );
    }
    y
}

/// `ip -j route` of `n` host routes (about 130 bytes each).
fn routes(n: u32) -> String {
    let mut v = Vec::with_capacity(n as usize + 1);
    v.push(
        serde_json::json!({"dst": "default", "gateway": "198.18.0.254", "dev": "eth0",
        "protocol": "static", "flags": []}),
    );
    for i in 0..n {
        let a = std::net::Ipv4Addr::from(0xC612_0000u32 + (i % 131_072));
        v.push(
            serde_json::json!({"dst": a.to_string(), "dev": "eth0", "table": "main",
            "protocol": "static", "scope": "link", "flags": []}),
        );
    }
    serde_json::Value::Array(v).to_string()
}

/// `ip -j rule` with a forward `goto` chain of `n` rules before main.
fn goto_chain(n: u32) -> String {
    let mut v = vec![serde_json::json!({"priority": 0, "src": "all", "table": "local"})];
    for i in 0..n {
        v.push(serde_json::json!({"priority": 100 + i, "src": "all",
            "goto": 101 + i}));
    }
    v.push(serde_json::json!({"priority": 100 + n, "src": "all", "table": "main"}));
    v.push(serde_json::json!({"priority": 32766, "src": "all", "table": "main"}));
    serde_json::Value::Array(v).to_string()
}

/// A namespace's saved state with these routes and rules (one eth0 with 198.18.0.1/15).
fn state_dir(dir: &Path, name: &str, routes: &str, rules: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let addr = serde_json::json!([
        {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
         "operstate": "UNKNOWN", "link_type": "loopback", "addr_info": [
            {"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host"}]},
        {"ifindex": 2, "ifname": "eth0", "flags": ["BROADCAST", "UP", "LOWER_UP"], "mtu": 1500,
         "operstate": "UP", "link_type": "ether", "address": "02:00:00:00:00:01", "addr_info": [
            {"family": "inet", "local": "198.18.0.1", "prefixlen": 15, "scope": "global"}]}
    ]);
    std::fs::write(d.join("addr.json"), addr.to_string()).unwrap();
    std::fs::write(d.join("route.json"), routes).unwrap();
    std::fs::write(d.join("rule.json"), rules).unwrap();
    d
}

fn default_rules() -> String {
    r#"[{"priority":0,"src":"all","table":"local"},{"priority":32766,"src":"all","table":"main"},{"priority":32767,"src":"all","table":"default"}]"#.to_string()
}

/// `rdma res show qp -j` with `n` RC QPs.
fn qp_table(n: u32) -> String {
    let mut t = String::with_capacity(n as usize * 160);
    t.push('[');
    for i in 0..n {
        if i > 0 {
            t.push(',');
        }
        let _ = write!(
            t,
            r#"{{"ifindex":2,"ifname":"mlx5_0","port":1,"lqpn":{},"rqpn":{},"type":"RC","state":"RTS","rq-psn":{},"sq-psn":{},"pid":{},"comm":"ib_write_bw"}}"#,
            1000 + i,
            2_000_000 + i,
            i,
            i,
            100 + i % 1000
        );
    }
    t.push(']');
    t
}

/// A classic pcap header followed by `body`.
fn pcap_with(body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + body.len());
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&262_144u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    v.extend_from_slice(body);
    v
}

/// A pcapng section of `n` interface description blocks, then one frame on the last.
fn pcapng_many_interfaces(n: u32) -> Vec<u8> {
    let mut v = Vec::new();
    // SHB: type, length 28, BOM, version 1.0, section length -1, length
    for w in [0x0A0D_0D0Au32, 28, 0x1A2B_3C4D] {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v.extend_from_slice(&1u16.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes());
    v.extend_from_slice(&(-1i64).to_le_bytes());
    v.extend_from_slice(&28u32.to_le_bytes());
    for _ in 0..n {
        // IDB: type 1, length 20, linktype 1, reserved, snaplen, length
        for w in [1u32, 20] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(&1u16.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&262_144u32.to_le_bytes());
        v.extend_from_slice(&20u32.to_le_bytes());
    }
    v
}

/// Deterministic noise (xorshift), so a failure can be reproduced.
fn noise(len: usize, mut x: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

fn cases(dir: &Path) -> Vec<Case> {
    let mut c = Vec::new();
    let mut case = |name: &'static str, args: Vec<String>, exit: Exit, inputs: Vec<PathBuf>| {
        c.push(Case {
            name,
            args,
            exit,
            inputs,
            says: None,
        });
    };
    let findings: &'static [i32] = &[0, 1];

    let bomb_cfg = write(dir, "agent.yaml", yaml_alias_bomb());
    case(
        "agent --config: YAML alias bomb",
        vec![
            "agent".into(),
            "-i".into(),
            "lo".into(),
            "--config".into(),
            s(&bomb_cfg),
        ],
        Exit::Refused,
        vec![bomb_cfg],
    );
    let nads = write(dir, "nads-3000.json", nads_sharing_one_range(3000));
    case(
        "nad: 3,000 NADs sharing one range",
        vec![
            "netcheck".into(),
            "--nad".into(),
            s(&nads),
            "--format".into(),
            "json".into(),
        ],
        Exit::Reported(findings),
        vec![nads],
    );
    let bomb = write(dir, "bomb.yaml", yaml_alias_bomb());
    case(
        "nad: YAML alias bomb",
        vec!["netcheck".into(), "--nad".into(), s(&bomb)],
        Exit::Refused,
        vec![bomb.clone()],
    );
    let deep = write(dir, "deep.yaml", "[".repeat(5_000_000));
    case(
        "nad: 5 MB of nested YAML sequences",
        vec!["netcheck".into(), "--nad".into(), s(&deep)],
        Exit::Refused,
        vec![deep],
    );
    // yaml-rust2 holds a flow collection's tokens until it closes: YAML that is not JSON
    // is read up to 1 MiB (config::limits::YAML_TEXT_MAX_BYTES), JSON streams.
    for (name, file, len) in [
        (
            "nad: a 10 MB YAML flow list in a block entry",
            "flow-10m.yaml",
            10_000_000,
        ),
        (
            "nad: a 1 MiB YAML flow list in a block entry",
            "flow-1m.yaml",
            (1 << 20) - 16,
        ),
    ] {
        let mut y = String::from("- [");
        while y.len() + 4 < len {
            y.push_str("x, ");
        }
        y.push_str("x]\n");
        let p = write(dir, file, y);
        case(
            name,
            vec!["netcheck".into(), "--nad".into(), s(&p)],
            Exit::Refused,
            vec![p],
        );
    }
    let deep_json = write(dir, "deep.json", "[".repeat(5_000_000));
    case(
        "nad: 5 MB of nested JSON arrays",
        vec!["netcheck".into(), "--nad".into(), s(&deep_json)],
        Exit::Refused,
        vec![deep_json],
    );

    let many_routes = state_dir(dir, "routes", &routes(75_000), &default_rules());
    case(
        "netcheck: ip -j dump of 75,000 routes (10 MB)",
        vec!["netcheck".into(), "--from".into(), s(&many_routes)],
        Exit::Reported(findings),
        vec![many_routes.join("route.json")],
    );
    let chain = state_dir(dir, "goto", &routes(1), &goto_chain(20_000));
    case(
        "netcheck: forward goto chain of 20,000 rules",
        vec![
            "netcheck".into(),
            "--from".into(),
            s(&chain),
            "--route-get".into(),
            "198.18.0.9 from 198.18.0.1".into(),
        ],
        Exit::Reported(findings),
        vec![chain.join("rule.json")],
    );

    let qps = write(dir, "qps-60k.json", qp_table(60_000));
    case(
        "analyze --qp-table: 60,000 QPs (10 MB)",
        vec![
            "analyze".into(),
            "--qp-table".into(),
            s(&qps),
            sample("clean-rc.pcap"),
        ],
        Exit::Reported(findings),
        vec![qps],
    );

    let qps_big = write(dir, "qps-60k-b.json", qp_table(60_000));
    case(
        "qp-table: 60,000 QPs (10 MB)",
        vec!["qp-table".into(), s(&qps_big)],
        Exit::Reported(&[0]),
        vec![qps_big],
    );
    case(
        "qp-table: /dev/zero",
        vec!["qp-table".into(), "/dev/zero".into()],
        Exit::Refused,
        Vec::new(),
    );
    let random = write(
        dir,
        "noise.pcap",
        pcap_with(&noise(10_000_000, 0x9e37_79b9)),
    );
    for (name, cmd) in [
        ("analyze: 10 MB of noise after a pcap header", "analyze"),
        ("decode: 10 MB of noise after a pcap header", "decode"),
    ] {
        case(
            name,
            vec![cmd.into(), s(&random)],
            Exit::Reported(&[0, 1, 2]),
            vec![random.clone()],
        );
    }
    let idbs = write(dir, "idbs.pcapng", pcapng_many_interfaces(500_000));
    case(
        "analyze: pcapng of 500,000 interfaces",
        vec!["analyze".into(), s(&idbs)],
        Exit::Reported(&[0, 1, 2]),
        vec![idbs],
    );
    let plugins = write(dir, "plugins.json", nad_with_plugins(200_000));
    case(
        "nad: one NAD with 200,000 plugins",
        vec!["netcheck".into(), "--nad".into(), s(&plugins)],
        Exit::Reported(&[0, 1, 2]),
        vec![plugins],
    );
    let comment = write(dir, "comment.pcapng", pcapng_with_comment(9_000_000));
    case(
        "decode -v: a 9 MB pcapng comment",
        vec!["decode".into(), "-v".into(), s(&comment)],
        Exit::Reported(&[0, 2]),
        vec![comment],
    );
    c.extend(sysfs_cases(dir));
    c
}

/// One NAD whose configuration chains `n` sbr plugins.
fn nad_with_plugins(n: usize) -> String {
    let plugins = vec![r#"{"type":"sbr"}"#; n].join(",");
    let config = format!(r#"{{"cniVersion":"0.3.1","name":"big","plugins":[{plugins}]}}"#);
    serde_json::json!({"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "big"}, "spec": {"config": config}})
    .to_string()
}

/// A pcapng section with one interface and one packet carrying `len` bytes of comments
/// (options of at most 65,532 bytes each, the first with terminal escapes in it).
fn pcapng_with_comment(len: usize) -> Vec<u8> {
    let mut opts = Vec::with_capacity(len + 1024);
    let mut left = len;
    let mut first = true;
    while left > 0 {
        let n = left.min(65_532);
        let mut text = if first {
            b"\x1b[2J\x1b]0;pwned\x07 ".to_vec()
        } else {
            Vec::new()
        };
        first = false;
        text.resize(n, b'A');
        opts.extend_from_slice(&1u16.to_le_bytes());
        opts.extend_from_slice(&(n as u16).to_le_bytes());
        opts.extend_from_slice(&text);
        opts.extend(std::iter::repeat_n(0u8, (4 - n % 4) % 4));
        left -= n;
    }
    opts.extend_from_slice(&[0; 4]); // opt_endofopt
    let mut v = pcapng_many_interfaces(1);
    let frame = [0u8; 60];
    let total = (28 + frame.len() + opts.len() + 4) as u32;
    for w in [6, total, 0, 0, 0, frame.len() as u32, frame.len() as u32] {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v.extend_from_slice(&frame);
    v.extend_from_slice(&opts);
    v.extend_from_slice(&total.to_le_bytes());
    v
}

/// Copies the directory tree `from` to `to` (files and directories only).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// netcheck over a sysfs tree whose `out_of_sequence` counter is not a small file: a
/// symlink to /dev/zero, a FIFO nobody writes, a 1 GiB sparse file. Each is refused or
/// reported, naming the counter, never read whole and never "no problems found".
fn sysfs_cases(dir: &Path) -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let state = root.join("../shared/scenarios/sbr-arp/expected/fixed/state/pod1");
    if !state.is_dir() {
        skip("../shared/scenarios/sbr-arp not found: the sysfs cases need its pod1 state");
        return Vec::new();
    }
    let counter = "sys/class/infiniband/mlx5_2/ports/1/hw_counters/out_of_sequence";
    let mut out = Vec::new();
    for (name, label) in [
        ("zero", "netcheck: a counter file that is /dev/zero"),
        ("fifo", "netcheck: a FIFO in place of a counter file"),
        ("huge", "netcheck: a 1 GiB counter file"),
    ] {
        let tree = dir.join(format!("sysfs-{name}"));
        copy_tree(&root.join("tests/fixtures/qos/good"), &tree);
        let p = tree.join(counter);
        std::fs::remove_file(&p).unwrap();
        match name {
            "zero" => std::os::unix::fs::symlink("/dev/zero", &p).unwrap(),
            "fifo" => {
                let ok = Command::new("mkfifo").arg(&p).status().unwrap().success();
                assert!(ok, "mkfifo {}", p.display());
            }
            _ => std::fs::File::create(&p).unwrap().set_len(1 << 30).unwrap(),
        }
        out.push(Case {
            name: label,
            args: vec![
                "netcheck".into(),
                "--from".into(),
                s(&state),
                "--sysfs-root".into(),
                s(&tree.join("sys")),
            ],
            exit: Exit::Reported(&[1, 2]),
            inputs: Vec::new(),
            says: Some("out_of_sequence"),
        });
    }
    out
}

#[test]
fn every_surface_stays_within_256_mib_and_10_s() {
    // Its limits (256 MiB, 10 s a case) are measured: not beside another heavy test.
    let _serial = common::serial();
    if !Path::new("/usr/bin/time").exists() {
        return skip("/usr/bin/time not installed (Debian package `time`)");
    }
    let dir = std::env::temp_dir().join(format!("rocetap-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut table = String::from("case | exit | peak RSS | wall | stdout | stderr\n");
    let mut bad = Vec::new();
    for (n, case) in cases(&dir).into_iter().enumerate() {
        for p in &case.inputs {
            let len = std::fs::metadata(p).unwrap().len();
            assert!(
                len <= INPUT_LIMIT,
                "{}: input {} is {len} bytes",
                case.name,
                p.display()
            );
        }
        let o = run(&case, n, &dir);
        let first = o.stderr.lines().next().unwrap_or("").to_string();
        let (rss, wall) = match (o.rss_kib, o.wall_s) {
            (Some(r), Some(w)) => (format!("{:.1} MiB", r as f64 / 1024.0), format!("{w:.2} s")),
            _ => ("?".to_string(), "killed at 60 s".to_string()),
        };
        let _ = writeln!(
            table,
            "{} | {:?} | {rss} | {wall} | {} B | {}",
            case.name, o.code, o.stdout_bytes, first
        );
        let exit_ok = match case.exit {
            Exit::Refused => o.code == Some(2) && o.stderr.trim_end().lines().count() == 1,
            Exit::Reported(codes) => o.code.is_some_and(|c| codes.contains(&c)),
        };
        let panicked = o.stderr.contains("panicked") || o.code == Some(101);
        // Nothing from the input reaches the terminal raw (and no color on a pipe).
        let raw = o.stdout.contains('\x1b') || o.stderr.contains('\x1b');
        let said = case
            .says
            .is_none_or(|w| o.stderr.contains(w) || o.stdout.contains(w));
        let over = o.rss_kib.is_none_or(|r| r > RSS_LIMIT_KIB)
            || o.wall_s.is_none_or(|w| w > WALL_LIMIT_S);
        if !exit_ok || panicked || over || !said || raw {
            bad.push(format!(
                "{}: {:?} {}",
                case.name,
                o.code,
                o.stderr.trim_end()
            ));
        }
    }
    println!("{table}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        bad.is_empty(),
        "over budget or wrong exit:\n{}\n\n{table}",
        bad.join("\n")
    );
}
