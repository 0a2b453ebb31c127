//! The CNI configuration's parser and keys on hand-written configurations.

use super::*;

fn cfg(text: &str) -> Config {
    let n = Node {
        pos: Pos { line: 1, col: 1 },
        style: Style::Quoted,
        value: yaml::Value::Str(text.into()),
        size: 1,
    };
    parse(Some(&n)).unwrap()
}

#[test]
fn chains_ipam_and_the_fixed_chain() {
    let c = cfg(
        r#"{"cniVersion":"0.3.1","name":"r0","plugins":[{"type":"sriov","ipam":{"type":"whereabouts","range":"198.51.100.0/24","exclude":["198.51.100.1/32","bad"],"range_start":"198.51.100.10"}}]}"#,
    );
    assert!(c.conflist);
    assert_eq!(c.plugins[0].ty, "sriov");
    let ipam = ipam_of(&c.plugins[0]).unwrap();
    assert_eq!(ipam.ranges[0].cidr.to_string(), "198.51.100.0/24");
    assert_eq!(ipam.ranges[0].excludes.len(), 1);
    assert_eq!(ipam.bad[0].0, "spec.config.plugins[0].ipam.exclude[1]");
    assert!(ipam.ranges[0].start.is_some());
    let fixed = with_sbr(&c);
    assert_eq!(fixed["plugins"][1]["type"], "sbr");
    let single = cfg(
        r#"{"cniVersion":"1.0.0","name":"r0","type":"sriov","ipam":{"type":"whereabouts","range":"198.51.100.10-198.51.100.50/24"}}"#,
    );
    let ipam = ipam_of(&single.plugins[0]).unwrap();
    assert_eq!(
        ipam.ranges[0].start.as_ref().unwrap().0,
        parse_ip("198.51.100.10").unwrap()
    );
    let fixed = with_sbr(&single);
    assert_eq!(fixed["plugins"][0]["type"], "sriov");
    assert!(fixed["plugins"][0].get("cniVersion").is_none());
    assert_eq!(fixed["plugins"][1]["type"], "sbr");
    assert_eq!(
        suggest(WHEREABOUTS_KEYS, "exlcude").as_deref(),
        Some("exclude")
    );
}
