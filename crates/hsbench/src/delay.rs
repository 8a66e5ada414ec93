//! `hsbench delay-proxy`: a TCP relay that holds every chunk of bytes for a
//! fixed time before forwarding it, in each direction, to measure a server
//! as if it ran on another host (this kernel has no netem). A round trip
//! through it costs twice the delay on top of loopback's; bytes keep their
//! order, and chunks in flight overlap (the delay is latency, not a
//! throughput cap), as on a network link.
//!
//! Threads, not tasks: tokio's timer counts whole milliseconds, and a
//! 100 µs delay needs the kernel's own sleep (with the thread's timer slack
//! set to 1 ns, it overshoots by about ten µs). Each direction of each
//! connection has a reader thread and a writer thread, so reading goes on
//! while earlier chunks wait.
//!
//!     hsbench delay-proxy --listen 127.0.0.1:13306 --to 127.0.0.1:3306 --delay-us 100

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::args::DelayArgs;

/// Largest chunk read at once.
const CHUNK: usize = 64 * 1024;

/// Serves until killed: prints `delay-proxy: listening ADDR ...` once bound.
pub fn run(a: &DelayArgs) -> Result<()> {
    let listener =
        TcpListener::bind(&a.listen).with_context(|| format!("listen on {}", a.listen))?;
    println!(
        "delay-proxy: listening {} -> {} (+{} µs each way)",
        listener.local_addr()?,
        a.to,
        a.delay_us
    );
    let delay = Duration::from_micros(a.delay_us);
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(&a.to) else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        relay(client, server2, delay);
        relay(server, client2, delay);
    }
    Ok(())
}

/// Reads from `from` on one thread and writes each chunk to `to` on
/// another once `delay` has passed since it was read. Ends when either
/// side closes.
fn relay(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        fine_timer_slack();
        let mut out = Vec::new();
        let mut next: Option<(Instant, Vec<u8>)> = None;
        loop {
            let (due, bytes) = match next.take() {
                Some(chunk) => chunk,
                None => match rx.recv() {
                    Ok(chunk) => chunk,
                    Err(_) => break,
                },
            };
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            out.clear();
            out.extend_from_slice(&bytes);
            // Chunks already due leave in the same write; the first not
            // yet due waits its turn.
            let now = Instant::now();
            while let Ok((due, more)) = rx.try_recv() {
                if due > now {
                    next = Some((due, more));
                    break;
                }
                out.extend_from_slice(&more);
            }
            if to.write_all(&out).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// The kernel may wake a sleeping thread up to its timer slack late
/// (50 µs by default): 1 ns here, since the delay is what is measured.
fn fine_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) changes only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}
