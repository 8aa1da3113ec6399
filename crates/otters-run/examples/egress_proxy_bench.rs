//! The egress proxy's speed and memory (issue 36), run by `bench/egress.sh`: a 256 MiB download
//! from a local server directly and through the proxy (`CONNECT`), alternating, best of ROUNDS; then
//! the process's resident memory with 100 tunnels open through it. Not a test: numbers, printed.
//!
//! Usage: `cargo run --release -p otters-run --example egress_proxy_bench [MIB] [ROUNDS]`

use otters_agentfile::ir::egress::parse;
use otters_run::egress::proxy::{start, Config, Report};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A server that sends `bytes` to each connection after reading one byte, or holds it open when
/// `bytes` is 0.
fn server(bytes: u64, port: u16) -> u16 {
    let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let mut c = c;
                    let mut one = [0u8; 1];
                    if c.read_exact(&mut one).is_err() {
                        return;
                    }
                    let chunk = vec![7u8; 256 * 1024];
                    let mut left = bytes;
                    while left > 0 {
                        let n = left.min(chunk.len() as u64) as usize;
                        if c.write_all(&chunk[..n]).is_err() {
                            return;
                        }
                        left -= n as u64;
                    }
                    if bytes == 0 {
                        let _ = c.read(&mut one);
                    }
                })
                .unwrap();
        }
    });
    port
}

/// CPU time of the whole process so far (user + system of every thread), in clock ticks.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    n(11) + n(12)
}

fn download(mut s: TcpStream, want: u64) -> Duration {
    let t = Instant::now();
    s.write_all(b"x").unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    while got < want {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "short download: {got} of {want}");
        got += n as u64;
    }
    t.elapsed()
}

fn tunnel(proxy: std::net::SocketAddr, port: u16) -> TcpStream {
    let mut s = TcpStream::connect(proxy).unwrap();
    write!(
        s,
        "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut b).unwrap();
        head.push(b[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let bytes = mib << 20;
    // bench/egress.sh fixes the server's port when it also runs a reference relay (HAProxy) in
    // front of it: EGRESS_BENCH_PORT, the server's port; EGRESS_BENCH_RELAY, the relay's address.
    let fixed = std::env::var("EGRESS_BENCH_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let relay: Option<std::net::SocketAddr> = std::env::var("EGRESS_BENCH_RELAY")
        .ok()
        .and_then(|r| r.parse().ok());
    let (big, idle) = (server(bytes, fixed), server(0, 0));
    let allow = vec![
        parse(&format!("127.0.0.1:{big}")).unwrap(),
        parse(&format!("127.0.0.1:{idle}")).unwrap(),
    ];
    let report: Report = Arc::new(|e| eprintln!("refused: {e:?}"));
    let proxy = start(
        TcpListener::bind("127.0.0.1:0").unwrap(),
        Config::new(allow),
        report,
    )
    .unwrap();
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    let (mut direct_cpu, mut proxied_cpu) = (0u64, 0u64);
    let mut relayed = Vec::new();
    for _ in 0..rounds {
        let t0 = cpu_ticks();
        direct.push(download(
            TcpStream::connect(("127.0.0.1", big)).unwrap(),
            bytes,
        ));
        let t1 = cpu_ticks();
        proxied.push(download(tunnel(proxy.addr(), big), bytes));
        let t2 = cpu_ticks();
        direct_cpu += t1 - t0;
        proxied_cpu += t2 - t1;
        if let Some(r) = relay {
            relayed.push(download(TcpStream::connect(r).unwrap(), bytes));
        }
    }
    let best = |v: &[Duration]| v.iter().min().copied().unwrap_or_default();
    #[allow(clippy::cast_precision_loss)] // a size in MiB, far below 2^52
    let mibs = |d: Duration| mib as f64 / d.as_secs_f64();
    let (d, p) = (best(&direct), best(&proxied));
    println!("download {mib} MiB, best of {rounds}: direct {:.0} MiB/s, through the proxy {:.0} MiB/s, ratio {:.2}", mibs(d), mibs(p), d.as_secs_f64() / p.as_secs_f64());
    if !relayed.is_empty() {
        let r = best(&relayed);
        println!(
            "reference relay (HAProxy, mode tcp, splice): {:.0} MiB/s, ratio {:.2}",
            mibs(r),
            d.as_secs_f64() / r.as_secs_f64()
        );
    }
    let sum = |v: &[Duration]| v.iter().sum::<Duration>().as_secs_f64();
    #[allow(clippy::cast_precision_loss)] // clock ticks of a few seconds
    let busy = |ticks: u64, v: &[Duration]| ticks as f64 / 100.0 / sum(v);
    println!(
        "CPU busy while downloading (cores, of {}): direct {:.2}, through the proxy {:.2}",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        busy(direct_cpu, &direct),
        busy(proxied_cpu, &proxied)
    );
    let before = rss_kib();
    let open: Vec<TcpStream> = (0..100).map(|_| tunnel(proxy.addr(), idle)).collect();
    for mut s in &open {
        s.write_all(b"x").unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let after = rss_kib();
    println!(
        "resident memory of the whole process (proxy, servers and clients): {} KiB before, {} KiB with 100 tunnels open (+{} KiB)",
        before,
        after,
        after.saturating_sub(before)
    );
    drop(open);
}
