//! A TCP proxy in front of a MySQL server (or vtgate) that can hold the
//! answer to the next COMMIT passing it: the server commits, the client
//! never hears so (a network that stalls). For the in-doubt COMMIT tests
//! (tests/mysql_in_doubt.rs, tests/vitess.rs).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A TCP proxy in front of the server that can hold the answer to the next
/// COMMIT that passes it (the connection's later bytes from the server are
/// never delivered); other connections pass as usual.
pub struct Proxy {
    pub url: String,
    arm: Arc<AtomicBool>,
    held: Arc<AtomicBool>,
    /// New connections are closed at once (the server looks down).
    refuse: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(server_url: &str) -> Proxy {
        let (head, port) = server_url.rsplit_once(':').expect("url with a port");
        let upstream = format!("127.0.0.1:{port}");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("{head}:{}", listener.local_addr().expect("addr").port());
        let (arm, held) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (a, h) = (arm.clone(), held.clone());
        let refuse = Arc::new(AtomicBool::new(false));
        let r = refuse.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if r.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let hold = Arc::new(AtomicBool::new(false));
                let (mut c_in, mut s_out) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let (arm, held, hold_up) = (a.clone(), h.clone(), hold.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = c_in.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        let chunk = &buf[..n];
                        if chunk.windows(7).any(|w| w == b"\x03COMMIT")
                            && arm.swap(false, Ordering::SeqCst)
                        {
                            hold_up.store(true, Ordering::SeqCst);
                            held.store(true, Ordering::SeqCst);
                        }
                        if s_out.write_all(chunk).is_err() {
                            break;
                        }
                    }
                    let _ = s_out.shutdown(std::net::Shutdown::Write);
                });
                let (mut s_in, mut c_out) = (server, client);
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65536];
                    while let Ok(n) = s_in.read(&mut buf) {
                        if n == 0 || hold.load(Ordering::SeqCst) {
                            break;
                        }
                        if c_out.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Proxy {
            url,
            arm,
            held,
            refuse,
        }
    }

    pub fn refuse_new_connections(&self, refuse: bool) {
        self.refuse.store(refuse, Ordering::SeqCst);
    }

    pub fn hold_next_commit_answer(&self) {
        self.arm.store(true, Ordering::SeqCst);
    }

    pub fn held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }
}
