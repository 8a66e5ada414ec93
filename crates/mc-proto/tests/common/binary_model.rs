//! The model server's binary half: `parse_binary` and the binary encoders
//! over the model's items (see `model.rs` for what the model is for).

use mc_proto::binary::{
    self, BinaryCommand, BinaryDecoded, BinaryDecoder, BinaryRequest, BinaryStore, ResponseHeader,
    Status,
};

use super::model::{Item, Model, Outcome};

impl Model {
    pub fn run_binary(&mut self, input: &[u8]) -> Outcome {
        let mut decoder = BinaryDecoder::new(self.max_item_size);
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            match decoder.decode(&input[at..]) {
                BinaryDecoded::Incomplete => break,
                BinaryDecoded::Skipped(n) => at += n,
                BinaryDecoded::Error { error, consumed } => {
                    error.encode(&mut out);
                    if error.close {
                        return closed(out);
                    }
                    at += consumed;
                }
                BinaryDecoded::Request { request, consumed } => {
                    at += consumed;
                    if let BinaryCommand::Quit { quiet } = request.command {
                        if !quiet {
                            let header = answer_header(&request, Status::NoError);
                            binary::write_response(&mut out, header, &[], &[], &[]);
                        }
                        return closed(out);
                    }
                    self.execute_binary(&request, &mut out);
                }
            }
        }
        Outcome {
            answer: out,
            closed: false,
            settled: at == input.len() && decoder.swallowing() == 0,
        }
    }

    fn execute_binary(&mut self, request: &BinaryRequest<'_>, out: &mut Vec<u8>) {
        let header = &request.header;
        let status = match &request.command {
            BinaryCommand::Version => {
                let answer = answer_header(request, Status::NoError);
                binary::write_response(out, answer, &[], &[], self.version.as_bytes());
                return;
            }
            BinaryCommand::Noop => Status::NoError,
            BinaryCommand::Flush { .. } => {
                self.items.clear();
                Status::NoError
            }
            BinaryCommand::Get {
                key, return_key, ..
            }
            | BinaryCommand::GetAndTouch {
                key, return_key, ..
            } => match self.items.get(*key) {
                Some(item) => {
                    let shown_key: &[u8] = if *return_key { key } else { &[] };
                    binary::write_get_hit(out, header, 0, item.client_flags, shown_key, &item.data);
                    return;
                }
                None if *return_key => {
                    if !binary::suppressed(&request.command, Status::KeyNotFound) {
                        // memcached answers a keyed miss with the key, no message.
                        let answer = answer_header(request, Status::KeyNotFound);
                        binary::write_response(out, answer, &[], key, &[]);
                    }
                    return;
                }
                None => Status::KeyNotFound,
            },
            BinaryCommand::Touch { key, .. } => match self.items.get(*key) {
                Some(item) => {
                    binary::write_get_hit(out, header, 0, item.client_flags, &[], &[]);
                    return;
                }
                None => Status::KeyNotFound,
            },
            BinaryCommand::Store {
                mode,
                key,
                client_flags,
                value,
                ..
            } => self.store_binary(*mode, key, *client_flags, value, header.cas),
            BinaryCommand::Delete { key, .. } => match self.items.remove(*key) {
                Some(_) => Status::NoError,
                None => Status::KeyNotFound,
            },
            BinaryCommand::Arithmetic {
                key,
                increment,
                delta,
                initial,
                exptime,
                ..
            } => match self.arithmetic(key, *delta, *increment) {
                Ok(Some(value)) => return counter(request, value, out),
                Err(_) => Status::NonNumeric,
                Ok(None) if *exptime == u32::MAX => Status::KeyNotFound,
                Ok(None) => {
                    let item = Item {
                        client_flags: 0,
                        data: initial.to_string().into_bytes(),
                    };
                    self.items.insert(key.to_vec(), item);
                    return counter(request, *initial, out);
                }
            },
            // Groups a server does not have; memcached answers so.
            BinaryCommand::Stat { .. } => Status::KeyNotFound,
            // A server without SASL configured: memcached's answer.
            BinaryCommand::SaslListMechs => Status::UnknownCommand,
            other => panic!("not modelled: {other:?}"),
        };
        if binary::suppressed(&request.command, status) {
            return;
        }
        if status == Status::NoError {
            binary::write_response(out, answer_header(request, status), &[], &[], &[]);
        } else {
            binary::write_error(out, header.opcode, header.opaque, status);
        }
    }

    fn store_binary(
        &mut self,
        mode: BinaryStore,
        key: &[u8],
        client_flags: u32,
        value: &[u8],
        cas: u64,
    ) -> Status {
        let exists = self.items.contains_key(key);
        match mode {
            BinaryStore::Append | BinaryStore::Prepend => {
                let Some(item) = self.items.get_mut(key) else {
                    return Status::NotStored;
                };
                if mode == BinaryStore::Append {
                    item.data.extend_from_slice(value);
                } else {
                    item.data.splice(0..0, value.iter().copied());
                }
                return Status::NoError;
            }
            // No case's cas matches a real one.
            _ if cas != 0 => {
                return if exists {
                    Status::KeyExists
                } else {
                    Status::KeyNotFound
                };
            }
            BinaryStore::Add if exists => return Status::KeyExists,
            BinaryStore::Replace if !exists => return Status::KeyNotFound,
            _ => {}
        }
        let item = Item {
            client_flags,
            data: value.to_vec(),
        };
        self.items.insert(key.to_vec(), item);
        Status::NoError
    }
}

fn closed(answer: Vec<u8>) -> Outcome {
    Outcome {
        answer,
        closed: true,
        settled: false,
    }
}

/// The model knows no cas values: it writes 0, and the test masks
/// memcached's.
fn answer_header(request: &BinaryRequest<'_>, status: Status) -> ResponseHeader {
    ResponseHeader {
        opcode: request.header.opcode,
        status,
        opaque: request.header.opaque,
        cas: 0,
    }
}

fn counter(request: &BinaryRequest<'_>, value: u64, out: &mut Vec<u8>) {
    if !binary::suppressed(&request.command, Status::NoError) {
        binary::write_counter(out, &request.header, 0, value);
    }
}
