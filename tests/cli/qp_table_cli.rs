//! `rocetap qp-table`: the kernel's QP table as the JSON of `rdma res show qp -j`. A saved
//! table (the fixtures, among them real dumps from the Soft-RoCE lab) is read, checked and
//! written back with the same QPs, and reading what it wrote gives the same bytes; a bad
//! table is one line naming the file and the entry, exit 2; `live` reads this node's table
//! or says in one line why it cannot. The live table of real rxe devices is compared with
//! `rdma res show qp` in the lab (tests/lab/lab_rxe.rs, lab/rxe/README.md).

use crate::common;

use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qptable")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn saved_tables_are_written_back_with_the_same_qps() {
    let dir = std::env::temp_dir().join(format!("rocetap-qp-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        "node-a.json",
        "clean-rc-h1.json",
        "rxe-clean-write-A.json",
        "rxe-clean-write-B-dd.json",
    ] {
        let input: Value = serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap())
            .expect("fixture JSON");
        let o = common::rocetap(&["qp-table", &fixture(name)]);
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8(o.stdout).unwrap();
        assert_eq!(
            text.lines().count(),
            1,
            "{name}: one line, as rdma -j prints it"
        );
        let out: Value = serde_json::from_str(&text).unwrap();
        let (inq, outq) = (input.as_array().unwrap(), out.as_array().unwrap());
        assert_eq!(inq.len(), outq.len(), "{name}");
        for (a, b) in inq.iter().zip(outq) {
            // every key rocetap writes has rdma's value (drv_*, ifindex, pdn,
            // path-mig-state are not kept)
            for (k, v) in b.as_object().unwrap() {
                assert_eq!(&a[k], v, "{name}: {k}");
            }
            for k in [
                "ifname", "lqpn", "rqpn", "type", "state", "sq-psn", "rq-psn", "pid", "comm",
            ] {
                assert_eq!(a.get(k), b.get(k), "{name}: {k}");
            }
        }
        let again = dir.join(name);
        std::fs::write(&again, &text).unwrap();
        let o = common::rocetap(&["qp-table", &again.display().to_string()]);
        assert!(o.status.success());
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            text,
            "{name}: read back"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_tables_are_one_line_naming_the_file_exit_2() {
    let dir = std::env::temp_dir().join(format!("rocetap-qp-table-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, want) in [
        (
            "cut.json",
            "[{\"ifname\":\"rxe0\",\"lqpn\":",
            "line 1 column",
        ),
        ("obj.json", "{\"lqpn\":1}", "not a JSON array"),
        (
            "big.json",
            "[{\"ifname\":\"rxe0\",\"lqpn\":16777216}]",
            "entry 1: \"lqpn\" 16777216 does not fit in 24 bits",
        ),
        (
            "bin.json",
            "\u{0}\u{1}\u{ff}garbage",
            "not the JSON of `rdma res show qp -j`",
        ),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let ps = p.display().to_string();
        let o = common::rocetap(&["qp-table", &ps]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("rocetap: qp-table: QP table {ps}: ")),
            "{err}"
        );
        assert!(err.contains(want), "{name}: {err}");
        assert!(o.stdout.is_empty());
    }
    let o = common::rocetap(&["qp-table", "/nonexistent/t.json"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Names with terminal controls are written JSON-escaped (`\u001b`), never as raw bytes,
/// and read back to the same names.
#[test]
fn hostile_names_are_json_escaped() {
    let o = common::rocetap(&["qp-table", &fixture("clean-rc-hostile.json")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !o.stdout.iter().any(|&b| b < 0x20 && b != b'\n'),
        "raw controls"
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains(r#""comm":"\u001b[2J\u001b]0;pwned\u0007evil""#),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v[0]["comm"], "\u{1b}[2J\u{1b}]0;pwned\u{7}evil");
    assert_eq!(v[0]["ifname"], "mlx5_0\u{1b}[31m");
}

/// An error that quotes the table (a duplicate QP of a device named with terminal
/// controls) is one line with the controls escaped.
#[test]
fn errors_quoting_the_table_are_escaped() {
    let dir = std::env::temp_dir().join(format!("rocetap-qp-table-esc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("dup.json");
    std::fs::write(
        &p,
        r#"[{"ifname":"rxe\u001b]0;pwned\u0007\n","lqpn":5},{"ifname":"rxe\u001b]0;pwned\u0007\n","lqpn":5}]"#,
    )
    .unwrap();
    let o = common::rocetap(&["qp-table", &p.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        !o.stderr.iter().any(|&b| b == 0x1b || b == 0x07),
        "raw controls"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.ends_with("entries 1 and 2 are both QP 0x000005 of rxe\\x1b]0;pwned\\x07\\x0a\n"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A table larger than `config::limits::QP_TABLE_MAX_BYTES` (here `/dev/zero`, which
/// never ends) is refused in one line once that much is read, not held whole.
#[test]
fn endless_or_huge_tables_are_refused_in_one_line() {
    let t = std::time::Instant::now();
    let o = common::rocetap(&["qp-table", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err.trim_end(),
        "rocetap: qp-table: QP table /dev/zero: larger than 64 MiB, the most rocetap reads of one QP table"
    );
    assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
}

/// This node's table: without RDMA netlink (no rdma_rxe or HCA) the one-line error, with
/// devices a JSON array. (Not a skip: the error path is what a node without RDMA can check.)
#[test]
fn live_table_is_json_or_one_line_why_not() {
    let o = common::rocetap(&["qp-table"]);
    if o.status.success() {
        let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert!(v.is_array(), "{v}");
        return;
    }
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("rocetap: qp-table: QP table live: "),
        "{err}"
    );
    assert!(
        !std::path::Path::new("/sys/class/infiniband").exists(),
        "RDMA devices exist but the live table failed: {err}"
    );
    eprintln!("note: no RDMA devices here, qp-table live checked for its error: {err}");
}
