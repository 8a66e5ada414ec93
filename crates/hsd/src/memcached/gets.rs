//! Pipelined gets read as one batch: when a connection has sent several
//! plain gets in a row (text `get`/`gets`, binary Get, GetK and their quiet
//! forms, the binary clients' multi-get), their keys are read in one
//! storage batch, as one multi-get's are, and each request is answered in
//! order exactly as it would be alone. If the batch fails (a storage error,
//! an answer over `--max-response-bytes`), each request runs again alone,
//! so that each gets its own answer.

use super::binary::reply;
use super::item::Item;
use super::session::{McSession, Request, Resolved, TOO_LARGE_ANSWER};
use hsd_storage::Backend;
use mc_proto::binary::{write_get_hit, Status as BinaryStatus};
use mc_proto::response::{write_error, write_status, write_value};
use mc_proto::{BinaryCommand, Command, Status};

/// Keys one batch of pipelined gets reads at most (a multi-get's batch).
pub(crate) const MAX_BATCHED_KEYS: usize = super::session::GET_BATCH;

/// The keys a request reads if it is a plain get (one without a touch),
/// the only kind that is batched.
pub(crate) fn plain_get_keys(request: &Request<'_>) -> Option<usize> {
    match request {
        Request::Text(Command::Get {
            keys, touch: None, ..
        }) => Some(keys.len()),
        Request::Binary(req) => matches!(req.command, BinaryCommand::Get { .. }).then_some(1),
        _ => None,
    }
}

impl<B: Backend> McSession<B> {
    /// Answers `gets` (plain gets, see `plain_get_keys`) from one read.
    pub(crate) async fn handle_gets(&mut self, gets: Vec<Request<'_>>, out: &mut Vec<u8>) {
        let containers = self.containers.clone();
        let sep = containers.separator.as_slice();
        // Keys resolve in order: `@@name` switches the default for the
        // keys after it, as one by one.
        let mut asked = Vec::new();
        let mut wanted: Vec<Vec<Option<usize>>> = Vec::with_capacity(gets.len());
        for request in &gets {
            let keys: Vec<&[u8]> = match request {
                Request::Text(Command::Get { keys, .. }) => keys.clone(),
                Request::Binary(req) => match &req.command {
                    BinaryCommand::Get { key, .. } => vec![*key],
                    _ => Vec::new(),
                },
                Request::Text(_) => Vec::new(),
            };
            let mut slots = Vec::with_capacity(keys.len());
            for key in keys {
                match self.resolve(key) {
                    Resolved::Key(container, inner) => {
                        slots.push(Some(asked.len()));
                        asked.push((key, container, inner));
                    }
                    _ => slots.push(None),
                }
            }
            wanted.push(slots);
        }
        let Ok(items) = self.fetch_all(&asked, sep).await else {
            for request in gets {
                self.handle_request(request, out).await;
            }
            return;
        };
        let item = |slot: Option<usize>| slot.and_then(|i| items.get(i)).and_then(Option::as_ref);
        for (request, slots) in gets.iter().zip(wanted) {
            match request {
                Request::Text(Command::Get {
                    keys, return_cas, ..
                }) => {
                    let mut answer = Vec::new();
                    for (key, slot) in keys.iter().zip(slots) {
                        if let Some(item) = item(slot) {
                            let cas = return_cas.then_some(item.cas);
                            write_value(&mut answer, key, item.flags, &item.value, cas);
                        }
                    }
                    if answer.len() > self.max_answer {
                        write_error(out, TOO_LARGE_ANSWER);
                    } else {
                        out.extend_from_slice(&answer);
                        write_status(out, Status::End);
                    }
                }
                Request::Binary(req) => {
                    let found: Option<&Item> = slots.first().copied().and_then(item);
                    match (&req.command, found) {
                        (
                            BinaryCommand::Get {
                                key, return_key, ..
                            },
                            Some(item),
                        ) => {
                            let shown: &[u8] = if *return_key { key } else { b"" };
                            write_get_hit(
                                out,
                                &req.header,
                                item.cas,
                                item.flags,
                                shown,
                                &item.value,
                            );
                        }
                        _ => reply(out, req, BinaryStatus::KeyNotFound, b""),
                    }
                }
                Request::Text(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::{Container, ContainerSpec, Containers};
    use super::super::{door::McDoor, session::McSession, Memcached};
    use crate::admission::Admission;
    use crate::dispatch::Dispatcher;
    use crate::limits::{ConnectionLimits, MemoryBudget};
    use crate::port::PortKind;
    use crate::shared::testing::{local, shared};
    use hsd_storage::memory::{table_meta, Col, Idx, MemoryStore};
    use hsd_storage::WriteBatching;
    use std::rc::Rc;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// `mc.kv (k TEXT PRIMARY KEY, v TEXT)` with rows a, b, c.
    fn store() -> MemoryStore {
        let store = MemoryStore::new(WriteBatching::Batched);
        let col = |name| Col {
            name,
            integer: false,
            nullable: true,
        };
        let meta = table_meta(
            "mc",
            "kv",
            &[col("k"), col("v")],
            &[Idx {
                name: "PRIMARY",
                columns: &["k"],
                unique: true,
            }],
            None,
        );
        store.add_table(
            meta,
            &[
                vec![Some("a"), Some("va")],
                vec![Some("b"), Some("vb")],
                vec![Some("c"), Some("vc")],
            ],
        );
        store
    }

    /// Sends `request` on one connection and reads until the answer ends
    /// with `last`; the answer and the storage calls that scanned.
    fn exchange(request: &[u8], last: &[u8]) -> (Vec<u8>, Vec<String>) {
        let store = store();
        let spec = ContainerSpec {
            name: "default".into(),
            db_schema: "mc".into(),
            db_table: "kv".into(),
            key_columns: "k".into(),
            value_columns: "v".into(),
            ..ContainerSpec::default()
        };
        let containers =
            Containers::new(vec![Container::from_spec(spec).expect("spec")], None, None)
                .expect("containers");
        let front = Memcached::new(
            Arc::new(containers),
            1 << 20,
            1 << 20,
            None,
            None,
            Vec::new(),
            1 << 20,
        );
        let answer = local(async {
            let dispatcher = Rc::new(Dispatcher::new(PortKind::Memcached, shared(store.clone())));
            let session = McSession::new(&front, dispatcher, std::net::Ipv4Addr::LOCALHOST.into());
            let limits = ConnectionLimits {
                max_line: 1 << 20,
                idle_timeout: None,
                line_timeout: None,
                auth_timeout: None,
                input_budget: Arc::new(MemoryBudget::new(64 << 20)),
                output_budget: Arc::new(MemoryBudget::new(64 << 20)),
            };
            let place = Admission::new(1, None)
                .welcome(PortKind::Memcached, std::net::Ipv4Addr::LOCALHOST.into())
                .await
                .expect("a seat");
            let (_trigger, shutdown) = crate::shutdown::channel();
            let (mut client, server) = tokio::io::duplex(1 << 20);
            let served = tokio::task::spawn_local(crate::connection::serve(
                server,
                McDoor::new(session, 1 << 20),
                limits,
                place,
                shutdown,
            ));
            // One write: every request is in the server's first read.
            client.write_all(request).await.expect("send");
            let mut answer = Vec::new();
            while !answer.ends_with(last) {
                let mut buf = [0u8; 4096];
                let n = client.read(&mut buf).await.expect("read");
                assert!(n > 0, "closed after {answer:?}");
                answer.extend_from_slice(&buf[..n]);
            }
            drop(client);
            let _ = served.await;
            answer
        });
        let scans = store
            .log()
            .into_iter()
            .filter(|l| l.starts_with("scan"))
            .collect();
        (answer, scans)
    }

    #[test]
    fn pipelined_text_gets_are_one_read() {
        let (answer, scans) = exchange(
            b"get a\r\nget zz\r\ngets b c\r\nget @@nosuch.a\r\nget c\r\nmn\r\nget a\r\nmn\r\n",
            b"MN\r\nVALUE a 0 2\r\nva\r\nEND\r\nMN\r\n",
        );
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let cas = |key: &str| {
            answer
                .split("\r\n")
                .find(|l| l.starts_with(&format!("VALUE {key} 0 2 ")))
                .and_then(|l| l.rsplit(' ').next())
                .unwrap_or_else(|| panic!("a cas for {key} in {answer}"))
                .to_string()
        };
        let want = format!(
            "VALUE a 0 2\r\nva\r\nEND\r\nEND\r\nVALUE b 0 2 {}\r\nvb\r\nVALUE c 0 2 {}\r\nvc\r\nEND\r\n\
             END\r\nVALUE c 0 2\r\nvc\r\nEND\r\nMN\r\nVALUE a 0 2\r\nva\r\nEND\r\nMN\r\n",
            cas("b"),
            cas("c")
        );
        assert_eq!(answer, want);
        // Five gets (five keys to read) in one scan; the get after `mn`
        // in another.
        assert_eq!(scans, ["scan x5", "scan x1"]);
    }

    #[test]
    fn pipelined_binary_gets_are_one_read() {
        use mc_proto::binary::RequestHeader;
        let request = |opcode: u8, key: &[u8], opaque: u32| {
            let mut out = Vec::new();
            RequestHeader {
                magic: 0x80,
                opcode,
                key_len: key.len() as u16,
                extras_len: 0,
                data_type: 0,
                vbucket: 0,
                body_len: key.len() as u32,
                opaque,
                cas: 0,
            }
            .encode(&mut out);
            out.extend_from_slice(key);
            out
        };
        // GetK a, GetKQ zz (a miss, left out), GetKQ b, GetQ c, Noop.
        let mut bytes = request(0x0c, b"a", 1);
        bytes.extend(request(0x0d, b"zz", 2));
        bytes.extend(request(0x0d, b"b", 3));
        bytes.extend(request(0x09, b"c", 4));
        let noop = request(0x0a, b"", 5);
        bytes.extend(&noop);
        let mut noop_answer = noop.clone();
        noop_answer[0] = 0x81;
        let (answer, scans) = exchange(&bytes, &noop_answer);
        // Each answer: opcode, key, value, opaque.
        let mut seen = Vec::new();
        let mut rest = &answer[..];
        while rest.len() >= 24 {
            let key_len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
            let extras = usize::from(rest[4]);
            let body = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize;
            let opaque = u32::from_be_bytes([rest[12], rest[13], rest[14], rest[15]]);
            let key = &rest[24 + extras..24 + extras + key_len];
            let value = &rest[24 + extras + key_len..24 + body];
            seen.push((rest[1], key.to_vec(), value.to_vec(), opaque));
            rest = &rest[24 + body..];
        }
        assert_eq!(
            seen,
            [
                (0x0c, b"a".to_vec(), b"va".to_vec(), 1),
                (0x0d, b"b".to_vec(), b"vb".to_vec(), 3),
                (0x09, Vec::new(), b"vc".to_vec(), 4),
                (0x0a, Vec::new(), Vec::new(), 5),
            ]
        );
        assert_eq!(scans, ["scan x4"]);
    }
}
