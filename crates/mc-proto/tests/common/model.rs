//! A model server: this crate's decoders and encoders over a map of items.
//!
//! It answers what hsd's front will answer for the commands the
//! differential cases use (no cas values, ttls or access times, which only
//! the real cache knows). What it must get right is the refusals, the
//! `noreply`/`q` rules, the swallowing and the closing, all of which come
//! from the crate; the item logic here is the least that makes the valid
//! commands around them answer.

use std::collections::HashMap;

use mc_proto::response::{self, write_meta, MetaCode, MetaCommand, MetaFacts, Status};
use mc_proto::text::{Command, StoreMode, TextDecoder, TextLimits};
use mc_proto::Decoded;
use mc_proto::{number, ErrorReply, MetaFlags, MetaKey};

#[derive(Clone, Debug)]
pub(super) struct Item {
    pub(super) client_flags: u32,
    pub(super) data: Vec<u8>,
}

/// What the model answered to a whole input.
#[derive(Debug)]
pub struct Outcome {
    pub answer: Vec<u8>,
    pub closed: bool,
    /// Every byte was used and nothing is being swallowed: a marker command
    /// appended to the input would be answered.
    pub settled: bool,
}

pub struct Model {
    pub(super) items: HashMap<Vec<u8>, Item>,
    pub(super) version: String,
    pub(super) max_item_size: usize,
}

const NON_NUMERIC: &str = "cannot increment or decrement non-numeric value";

impl Model {
    pub fn new(version: &str, max_item_size: usize) -> Model {
        Model {
            items: HashMap::new(),
            version: version.to_string(),
            max_item_size,
        }
    }

    pub fn run_text(&mut self, input: &[u8]) -> Outcome {
        let mut decoder = TextDecoder::new(TextLimits {
            max_item_size: self.max_item_size,
            ..TextLimits::default()
        });
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            match decoder.decode(&input[at..]) {
                Decoded::Incomplete => break,
                Decoded::Skipped(n) => at += n,
                Decoded::Error { error, consumed } => {
                    error.encode(&mut out);
                    at += consumed;
                    if error.close {
                        return Outcome {
                            answer: out,
                            closed: true,
                            settled: false,
                        };
                    }
                }
                Decoded::Request {
                    request: command,
                    consumed,
                } => {
                    at += consumed;
                    if command == Command::Quit {
                        return Outcome {
                            answer: out,
                            closed: true,
                            settled: false,
                        };
                    }
                    self.execute(command, &mut out);
                }
            }
        }
        Outcome {
            answer: out,
            closed: false,
            settled: at == input.len() && decoder.swallowing() == 0,
        }
    }

    fn execute(&mut self, command: Command<'_>, out: &mut Vec<u8>) {
        match command {
            Command::Get {
                keys, return_cas, ..
            } => {
                // Cas values are the real cache's; the test masks them.
                let cas = return_cas.then_some(0);
                for key in keys {
                    if let Some(item) = self.items.get(key) {
                        response::write_value(out, key, item.client_flags, &item.data, cas);
                    }
                }
                response::write_status(out, Status::End);
            }
            Command::Store {
                mode,
                key,
                client_flags,
                data,
                noreply,
                ..
            } => {
                let status = self.store(key, mode, client_flags, data);
                if !noreply {
                    response::write_status(out, status);
                }
            }
            Command::Delete { key, noreply } => {
                let status = match self.items.remove(key) {
                    Some(_) => Status::Deleted,
                    None => Status::NotFound,
                };
                if !noreply {
                    response::write_status(out, status);
                }
            }
            Command::Arithmetic {
                key,
                delta,
                increment,
                noreply,
            } => {
                let answer = self.arithmetic(key, delta, increment);
                if noreply {
                    return;
                }
                match answer {
                    Ok(Some(value)) => response::write_number(out, value),
                    Ok(None) => response::write_status(out, Status::NotFound),
                    Err(message) => response::write_error(out, ErrorReply::ClientError(message)),
                }
            }
            Command::Touch { key, noreply, .. } => {
                let status = if self.items.contains_key(key) {
                    Status::Touched
                } else {
                    Status::NotFound
                };
                if !noreply {
                    response::write_status(out, status);
                }
            }
            Command::FlushAll { delay, noreply } => {
                if delay <= 0 {
                    self.items.clear();
                }
                if !noreply {
                    response::write_status(out, Status::Ok);
                }
            }
            Command::Version => response::write_version(out, &self.version),
            Command::Verbosity { noreply, .. } => {
                if !noreply {
                    response::write_status(out, Status::Ok);
                }
            }
            Command::MetaNoop => response::write_meta_noop(out),
            Command::MetaGet { key, flags } => self.meta_get(&key, &flags, out),
            Command::MetaSet {
                key,
                flags,
                mode,
                data,
            } => {
                let code = if flags.compare_cas.is_some() {
                    // No case's cas matches a real one.
                    if self.items.contains_key(&*key.bytes) {
                        MetaCode::Ex
                    } else {
                        MetaCode::Nf
                    }
                } else {
                    match self.store(&key.bytes, mode, flags.client_flags.unwrap_or(0), data) {
                        Status::Stored => MetaCode::Hd,
                        _ => MetaCode::Ns,
                    }
                };
                // memcached returns `c` whatever the code.
                let facts = MetaFacts {
                    cas: Some(0),
                    ..MetaFacts::default()
                };
                write_meta(out, MetaCommand::Set, code, &key, &flags, &facts, b"");
            }
            Command::MetaDelete { key, flags } => {
                let code = match self.items.remove(&*key.bytes) {
                    Some(_) => MetaCode::Hd,
                    None => MetaCode::Nf,
                };
                write_meta(
                    out,
                    MetaCommand::Delete,
                    code,
                    &key,
                    &flags,
                    &MetaFacts::default(),
                    b"",
                );
            }
            Command::MetaArithmetic {
                key,
                flags,
                increment,
            } => self.meta_arithmetic(&key, &flags, increment, out),
            Command::MetaDebug { key } => {
                assert!(
                    !self.items.contains_key(&*key.bytes),
                    "the model cannot answer me on a hit"
                );
                write_meta(
                    out,
                    MetaCommand::Get,
                    MetaCode::En,
                    &key,
                    &MetaFlags::default(),
                    &MetaFacts::default(),
                    b"",
                );
            }
            Command::Stats { .. } | Command::Quit => panic!("not modelled: {command:?}"),
        }
    }

    fn store(&mut self, key: &[u8], mode: StoreMode, client_flags: u32, data: &[u8]) -> Status {
        let exists = self.items.contains_key(key);
        match mode {
            StoreMode::Set => {}
            StoreMode::Add if exists => return Status::NotStored,
            StoreMode::Replace if !exists => return Status::NotStored,
            StoreMode::Add | StoreMode::Replace => {}
            StoreMode::Append | StoreMode::Prepend => {
                let Some(item) = self.items.get_mut(key) else {
                    return Status::NotStored;
                };
                if mode == StoreMode::Append {
                    item.data.extend_from_slice(data);
                } else {
                    item.data.splice(0..0, data.iter().copied());
                }
                return Status::Stored;
            }
            StoreMode::Cas(_) => {
                // No case's cas matches a real one.
                return if exists {
                    Status::Exists
                } else {
                    Status::NotFound
                };
            }
        }
        let item = Item {
            client_flags,
            data: data.to_vec(),
        };
        self.items.insert(key.to_vec(), item);
        Status::Stored
    }

    /// Ok(None): no such item.
    pub(super) fn arithmetic(
        &mut self,
        key: &[u8],
        delta: u64,
        increment: bool,
    ) -> Result<Option<u64>, &'static str> {
        let Some(item) = self.items.get_mut(key) else {
            return Ok(None);
        };
        let current = number::parse_u64(&item.data).ok_or(NON_NUMERIC)?;
        let value = if increment {
            current.wrapping_add(delta)
        } else {
            current.saturating_sub(delta)
        };
        item.data = number::counter_text(value, item.data.len());
        Ok(Some(value))
    }

    fn meta_get(&mut self, key: &MetaKey<'_>, flags: &MetaFlags<'_>, out: &mut Vec<u8>) {
        let Some(item) = self.items.get(&*key.bytes) else {
            write_meta(
                out,
                MetaCommand::Get,
                MetaCode::En,
                key,
                flags,
                &MetaFacts::default(),
                b"",
            );
            return;
        };
        // Items never expire here; cas values are masked by the test.
        let facts = MetaFacts {
            cas: Some(0),
            client_flags: Some(item.client_flags),
            ttl: Some(-1),
            size: Some(item.data.len()),
            ..MetaFacts::default()
        };
        let code = if flags.return_value {
            MetaCode::Va(item.data.len())
        } else {
            MetaCode::Hd
        };
        write_meta(out, MetaCommand::Get, code, key, flags, &facts, &item.data);
    }

    fn meta_arithmetic(
        &mut self,
        key: &MetaKey<'_>,
        flags: &MetaFlags<'_>,
        increment: bool,
        out: &mut Vec<u8>,
    ) {
        let delta = flags.delta.unwrap_or(1);
        let value = match self.arithmetic(&key.bytes, delta, increment) {
            Err(message) => return response::write_error(out, ErrorReply::ClientError(message)),
            Ok(Some(value)) => value,
            Ok(None) => match flags.vivify_ttl {
                Some(_) => {
                    let initial = flags.initial.unwrap_or(0);
                    let item = Item {
                        client_flags: 0,
                        data: initial.to_string().into_bytes(),
                    };
                    self.items.insert(key.bytes.to_vec(), item);
                    initial
                }
                None => {
                    let facts = MetaFacts::default();
                    return write_meta(
                        out,
                        MetaCommand::Arithmetic,
                        MetaCode::Nf,
                        key,
                        flags,
                        &facts,
                        b"",
                    );
                }
            },
        };
        let text = value.to_string();
        let code = if flags.return_value {
            MetaCode::Va(text.len())
        } else {
            MetaCode::Hd
        };
        let facts = MetaFacts {
            cas: Some(0),
            ttl: Some(-1),
            ..MetaFacts::default()
        };
        write_meta(
            out,
            MetaCommand::Arithmetic,
            code,
            key,
            flags,
            &facts,
            text.as_bytes(),
        );
    }
}
