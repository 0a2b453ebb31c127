//! The feeder's parts that need no terminal: speeds and hw_counters (the rings test
//! their own).

use super::*;

#[test]
fn speed_parses() {
    assert_eq!(Speed::parse("max"), Ok(Speed::Max));
    assert_eq!(Speed::parse("realtime"), Ok(Speed::Factor(1.0)));
    assert_eq!(Speed::parse("10"), Ok(Speed::Factor(10.0)));
    assert_eq!(Speed::parse("0.5x"), Ok(Speed::Factor(0.5)));
    assert!(Speed::parse("0").is_err());
    assert!(Speed::parse("-1").is_err());
    assert!(Speed::parse("fast").is_err());
}

#[test]
fn hw_counters_of_rdma_devices_and_their_netdevs() {
    let root = std::env::temp_dir().join(format!("rocetap-hw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dev = root.join("class/infiniband/mlx5_0");
    let hc = dev.join("ports/1/hw_counters");
    std::fs::create_dir_all(&hc).unwrap();
    std::fs::create_dir_all(dev.join("device/net/eth7")).unwrap();
    std::fs::write(hc.join("out_of_sequence"), "10\n").unwrap();
    std::fs::write(hc.join("np_cnp_sent"), "0\n").unwrap();
    // Not an RDMA device: nothing to read.
    assert!(HwReader::new(&root, &["lo".into()]).is_empty());
    for name in ["mlx5_0", "mlx5_0:1", "eth7"] {
        let mut r = HwReader::new(&root, &[name.to_string()]);
        assert!(!r.is_empty(), "{name}");
        std::fs::write(hc.join("out_of_sequence"), "10\n").unwrap();
        let t0 = Instant::now();
        let first = r.read(t0);
        assert_eq!(first.len(), 2);
        assert!(first
            .iter()
            .all(|c| c.per_s.is_none() && c.port == "mlx5_0/1"));
        std::fs::write(hc.join("out_of_sequence"), "30\n").unwrap();
        let second = r.read(t0 + Duration::from_secs(2));
        let oos = second.iter().find(|c| c.name == "out_of_sequence").unwrap();
        assert_eq!(oos.value, 30);
        assert_eq!(oos.per_s, Some(10.0));
    }
    assert!(HwReader::new(&root, &["mlx5_0:2".into()]).is_empty());
    let _ = std::fs::remove_dir_all(&root);
}
