//! `--tap` arguments: names, selectors, and what a selector matches.

use super::spec::{parse, Family, Select};
use super::Tap;
use dissectors::{TapId, TunnelKind};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

fn dcfg() -> dissectors::Config {
    dissectors::Config {
        roce_port: 4791,
        check_icrc: true,
    }
}

fn taps(args: &[&str]) -> Result<Vec<Tap>, String> {
    let a: Vec<String> = args.iter().map(ToString::to_string).collect();
    parse("analyze", &a, &dcfg())
}

const EXPORTER: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1));

fn id(kind: TunnelKind, session: u32, port: u32, egress: Option<bool>) -> TapId {
    TapId {
        kind,
        exporter: EXPORTER,
        session,
        port,
        egress,
    }
}

#[test]
fn names_default_to_the_stem_or_the_session() {
    let t = taps(&[
        "dir/nodeA.pcap",
        "b=x.pcap@erspan:7,out",
        "m.pcap@vxlan:100",
    ])
    .unwrap();
    let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["nodeA", "b", "vni-100"]);
    assert_eq!(t[0].select, None);
    assert_eq!(t[1].path, PathBuf::from("x.pcap"));
    let s = t[1].select.unwrap();
    assert_eq!((s.family, s.id, s.egress), (Family::Erspan, 7, Some(true)));
    // An `@` that starts no selector word is part of the file name.
    let t = taps(&["a@b.pcap", "c@1:2.pcap"]).unwrap();
    assert_eq!(t[0].path, PathBuf::from("a@b.pcap"));
    assert_eq!(t[1].path, PathBuf::from("c@1:2.pcap"));
}

#[test]
fn selectors_parse_and_print_back() {
    for s in [
        "erspan:7",
        "erspan:7,in",
        "erspan:7,out,port=3",
        "gre:12648430,from=198.51.100.1",
        "geneve:77",
    ] {
        assert_eq!(Select::parse(s).unwrap().to_string(), s);
    }
    for bad in [
        "erspan",
        "erspan:",
        "erspan:x",
        "sflow:1",
        "erspan:1,up",
        "erspan:1,port=x",
        "gre:1,from=nowhere",
    ] {
        assert!(Select::parse(bad).is_err(), "{bad}");
    }
    assert!(taps(&["x.pcap@sflow:1", "y.pcap"]).is_err());
}

#[test]
fn a_selector_matches_its_session_only() {
    let s = Select::parse("erspan:7,out").unwrap();
    assert!(s.matches(&id(TunnelKind::ErspanIII, 7, 3, Some(true))));
    assert!(!s.matches(&id(TunnelKind::ErspanIII, 7, 3, Some(false))));
    assert!(!s.matches(&id(TunnelKind::ErspanIII, 8, 3, Some(true))));
    assert!(!s.matches(&id(TunnelKind::Gre, 7, 0, None)));
    let any = Select::parse("erspan:7").unwrap();
    assert!(any.matches(&id(TunnelKind::ErspanII, 7, 1, None)));
    assert!(any.matches(&id(TunnelKind::ErspanIII, 7, 3, Some(false))));
    let vni = Select::parse("vxlan:100").unwrap();
    assert!(vni.matches(&id(TunnelKind::Vxlan, 100, 0, None)));
    assert!(!vni.matches(&id(TunnelKind::Geneve, 100, 0, None)));
    let far = Select::parse("gre:5,from=198.51.100.9").unwrap();
    assert!(!far.matches(&id(TunnelKind::Gre, 5, 0, None)));
    // A session's own selector matches it, and names it.
    let t = id(TunnelKind::ErspanIII, 9, 3, Some(false));
    assert!(Select::of(&t).matches(&t));
    assert_eq!(Select::of(&t).name(), "erspan-9-p3-in");
}

#[test]
fn counts_names_and_stdin_are_checked() {
    assert!(taps(&["a.pcap"])
        .unwrap_err()
        .contains("2 to 8 taps, 1 given"));
    assert!(taps(&["x/a.pcap", "y/a.pcap"])
        .unwrap_err()
        .contains("two taps are named a"));
    assert!(taps(&["-", "a.pcap"]).unwrap_err().contains("not stdin"));
    assert!(taps(&["a=m.pcap@mirrors"])
        .unwrap_err()
        .contains("no NAME="));
    let nine: Vec<String> = (0..9).map(|i| format!("t{i}.pcap")).collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    assert!(taps(&nine).unwrap_err().contains("9 given"));
}
