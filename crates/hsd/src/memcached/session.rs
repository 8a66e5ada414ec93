//! One memcached connection: its default container and the indexes it
//! opened, and each command turned into the executor's finds and writes
//! (`ops`) and answered in memcached's words (mc-proto's encoders).
//!
//! Commands run one at a time, in order; a multi-get is one batch. Keys
//! follow the plugin's syntax (`@@container.key`, `@@container` to switch
//! the connection's default), resolved here.

use super::answer::McAnswer;
use super::config::{self, Containers};
use super::fit;
use super::item::{expiry_of, now, written_cas, CasClock, Item, Layout};
use super::memory::MemoryItems;
use super::ops::{self, Decision, Failure, NewRow, Target, ERR_DATA_TOO_LONG};
use super::policy::{CachePolicy, Kind};
use super::sasl::SaslState;
use super::stats::{self, StatsAnswer, StatsContext};
use super::Memcached;
use crate::dispatch::Dispatcher;
use crate::exec::find::ERR_ANSWER_TOO_LARGE;
use hs_proto::{ErrorKind, Value};
use hsd_storage::{Backend, OpenedIndex};
use mc_proto::response::{
    write_error, write_meta, write_meta_debug, write_meta_noop, write_number, write_stat,
    write_status, write_value, write_version,
};
use mc_proto::{
    BinaryRequest, Command, ErrorReply, KeyTarget, MetaCode, MetaCommand, MetaFacts, MetaFlags,
    MetaKey, Status, StoreMode,
};
use std::rc::Rc;
use std::sync::Arc;

/// A request of either protocol.
pub(crate) enum Request<'a> {
    Text(Command<'a>),
    Binary(BinaryRequest<'a>),
}

/// Whether the connection goes on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Close,
}

/// Keys of a multi-get read as one batch (as HandlerSocket's pending
/// batches are bounded).
pub(super) const GET_BATCH: usize = 128;

/// Expired rows one batch of gets deletes at most (each is a write).
const MAX_LAZY_DELETES: usize = 16;

/// memcached's answer to a get it cannot hold (the executor's answers to
/// one batch, or the whole answer, past --max-response-bytes).
pub(super) const TOO_LARGE_ANSWER: ErrorReply =
    ErrorReply::ServerError("out of memory writing get response");

pub(crate) struct McSession<B: Backend> {
    dispatcher: Rc<Dispatcher<B, McAnswer>>,
    pub(super) containers: Arc<Containers>,
    layouts: Vec<Layout>,
    opened: Vec<Option<Arc<OpenedIndex>>>,
    /// The container plain keys go to (`@@name` changes it).
    default: usize,
    clock: Arc<CasClock>,
    locks: Arc<ops::KeyLocks>,
    flushes: Arc<super::flush::FlushSchedule>,
    memory: Arc<MemoryItems>,
    pub(super) stats: Arc<StatsContext>,
    /// `--max-response-bytes`: what one get's answer may hold.
    pub(super) max_answer: usize,
    /// Where the connection stands with SASL.
    pub(super) sasl: SaslState,
    /// The cas of the row the last store or incr/decr wrote (what the
    /// binary protocol's answer carries, and `ms`'s `c`).
    pub(super) written: u64,
}

/// What a key names, resolved against the containers.
pub(super) enum Resolved<'a> {
    Key(usize, &'a [u8]),
    /// `@@name`: the default was switched (or the name is unknown).
    Switched,
    /// `@@name.key` of a container that does not exist.
    Unknown,
}

/// How a store came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Stored,
    NotStored,
    Exists,
    NotFound,
}

/// How an incr/decr came out.
pub(super) enum Counted {
    Value(u64, Vec<u8>),
    NotFound,
    NonNumeric,
}

pub(super) fn failure_reply(f: Failure) -> ErrorReply {
    match f {
        Failure::Storage(ErrorKind::Storage(ERR_DATA_TOO_LONG)) => {
            ErrorReply::ServerError("object too large for cache")
        }
        Failure::Storage(ErrorKind::OpenTable) => {
            ErrorReply::ServerError("cannot open the container's table")
        }
        Failure::Storage(ErrorKind::Fld | ErrorKind::IdxNum) => {
            ErrorReply::ServerError("the container names a column or index its table lacks")
        }
        Failure::Storage(_) => ErrorReply::ServerError("storage error"),
        Failure::Contended => ErrorReply::ServerError("the row kept changing; try again"),
        Failure::BadKey => ErrorReply::ClientError("bad command line format"),
        Failure::Unkept(why) | Failure::Unusable(why) | Failure::Disabled(why) => {
            ErrorReply::ServerError(why)
        }
    }
}

impl<B: Backend> McSession<B> {
    pub(crate) fn new(
        front: &Memcached,
        dispatcher: Rc<Dispatcher<B, McAnswer>>,
        peer: std::net::IpAddr,
    ) -> Self {
        let containers = front.containers.clone();
        // Closed when the session is dropped, with its connection.
        front.stats.counters.connection_opened();
        McSession {
            dispatcher,
            layouts: containers.list.iter().map(Layout::of).collect(),
            opened: vec![None; containers.list.len()],
            default: containers.default,
            containers,
            clock: front.clock.clone(),
            locks: front.locks.clone(),
            flushes: front.flushes.clone(),
            memory: front.memory.clone(),
            max_answer: front.max_answer,
            stats: front.stats.clone(),
            sasl: SaslState::new(front.sasl.clone(), front.sasl_guard.clone(), peer),
            written: 0,
        }
    }

    /// Whether the port has SASL: then the connection speaks only the
    /// binary protocol, as memcached's under `-S`.
    pub(crate) fn sasl_enabled(&self) -> bool {
        self.sasl.enabled()
    }

    /// Whether only SASL and Version requests may run now.
    pub(crate) fn auth_required(&self) -> bool {
        self.sasl.required()
    }

    pub(super) fn resolve<'k>(&mut self, key: &'k [u8]) -> Resolved<'k> {
        match mc_proto::parse_key(key, &self.containers.delimiter) {
            KeyTarget::Default(k) => Resolved::Key(self.default, k),
            KeyTarget::InContainer { container, key } => match self.containers.find(container) {
                Some(c) if !key.is_empty() => Resolved::Key(c, key),
                _ => Resolved::Unknown,
            },
            KeyTarget::SwitchDefault { container } => {
                if let Some(c) = self.containers.find(container) {
                    self.default = c;
                }
                Resolved::Switched
            }
        }
    }

    async fn index(&mut self, container: usize) -> Result<Arc<OpenedIndex>, Failure> {
        if let Some(Some(index)) = self.opened.get(container) {
            return Ok(index.clone());
        }
        let req = self.containers.list[container].open_request();
        let index = self.dispatcher.open(req).await.map_err(Failure::Storage)?;
        // A table made after the start is checked now, as at the start.
        if config::index_refusal(
            &index.table,
            &index.index_meta().name,
            &self.containers.list[container],
        )
        .is_some()
        {
            return Err(Failure::Unusable(
                "the container's index is not unique on its key column alone",
            ));
        }
        let container_meta = &self.containers.list[container];
        if let Some(why) = super::policy::caching_refusal(
            container_meta,
            self.containers.row_cache,
            Some(&*index.table),
        ) {
            tracing::warn!("{why}");
            return Err(Failure::Unusable(
                "the container's caching policy: the row cache does not hold its keys",
            ));
        }
        self.opened[container] = Some(index.clone());
        Ok(index)
    }

    /// The key of a container for a command of `kind`, where the
    /// container's policy for it sends it (`policy`): to memory
    /// (`cache_only`, any key memcached takes), refused (`disabled`), or to
    /// the table once the key column is known to store the key as given
    /// (else `BadKey`: memcached's answer to a malformed key).
    async fn target<'k>(
        &mut self,
        container: usize,
        key: &'k [u8],
        kind: Kind,
    ) -> Result<Target<'k>, Failure> {
        let policy = self.containers.list[container].policies.of(kind);
        if policy == CachePolicy::Disabled {
            return Err(Failure::Disabled(match kind {
                Kind::Get => "the container's get_policy is disabled",
                Kind::Set => "the container's set_policy is disabled",
                Kind::Delete => "the container's delete_policy is disabled",
            }));
        }
        let index = self.index(container).await?;
        let memory = (policy == CachePolicy::CacheOnly).then(|| (self.memory.clone(), container));
        let key_column = index
            .columns
            .first()
            .and_then(|&c| index.table.columns.get(c));
        if memory.is_none()
            && !key_column.is_some_and(|column| fit::key_fits(self.containers.text, column, key))
        {
            return Err(Failure::BadKey);
        }
        Ok(Target {
            index,
            text: self.containers.text,
            layout: self.layouts[container],
            separator: &[],
            key,
            memory,
        })
    }

    /// Handles one request of either protocol; its answer goes to `out`.
    pub(crate) async fn handle_request(&mut self, request: Request<'_>, out: &mut Vec<u8>) -> Flow {
        match request {
            Request::Text(command) => self.handle(command, out).await,
            Request::Binary(request) => self.handle_binary(request, out).await,
        }
    }

    /// Handles one command; its answer goes to `out`.
    pub(crate) async fn handle(&mut self, command: Command<'_>, out: &mut Vec<u8>) -> Flow {
        let containers = self.containers.clone();
        let sep = containers.separator.as_slice();
        match command {
            Command::Get {
                keys,
                return_cas,
                touch,
            } => self.get(&keys, return_cas, touch, sep, out).await,
            Command::Store {
                mode,
                key,
                client_flags,
                exptime,
                data,
                noreply,
            } => {
                let mut answer = Vec::new();
                match self
                    .store(key, mode, client_flags, exptime, data, sep)
                    .await
                {
                    Ok(stored) => write_status(
                        &mut answer,
                        match stored {
                            Outcome::Stored => Status::Stored,
                            Outcome::NotStored => Status::NotStored,
                            Outcome::Exists => Status::Exists,
                            Outcome::NotFound => Status::NotFound,
                        },
                    ),
                    Err(f) => write_error(&mut answer, failure_reply(f)),
                }
                if !noreply {
                    out.extend_from_slice(&answer);
                }
            }
            Command::Delete { key, noreply } => {
                let mut answer = Vec::new();
                match self.delete(key, None, sep).await {
                    Ok(Outcome::Stored) => write_status(&mut answer, Status::Deleted),
                    Ok(Outcome::Exists) => write_status(&mut answer, Status::Exists),
                    Ok(_) => write_status(&mut answer, Status::NotFound),
                    Err(f) => write_error(&mut answer, failure_reply(f)),
                }
                if !noreply {
                    out.extend_from_slice(&answer);
                }
            }
            Command::Arithmetic {
                key,
                delta,
                increment,
                noreply,
            } => {
                let mut answer = Vec::new();
                match self.count(key, delta, increment, None, sep).await {
                    Ok(Counted::Value(n, _)) => write_number(&mut answer, n),
                    Ok(Counted::NotFound) => write_status(&mut answer, Status::NotFound),
                    Ok(Counted::NonNumeric) => write_error(
                        &mut answer,
                        ErrorReply::ClientError("cannot increment or decrement non-numeric value"),
                    ),
                    Err(f) => write_error(&mut answer, failure_reply(f)),
                }
                if !noreply {
                    out.extend_from_slice(&answer);
                }
            }
            Command::Touch {
                key,
                exptime,
                noreply,
            } => {
                let mut answer = Vec::new();
                match self.touch(key, exptime, sep).await {
                    Ok(Some(_)) => write_status(&mut answer, Status::Touched),
                    Ok(None) => write_status(&mut answer, Status::NotFound),
                    Err(f) => write_error(&mut answer, failure_reply(f)),
                }
                if !noreply {
                    out.extend_from_slice(&answer);
                }
            }
            Command::FlushAll { delay, noreply } => {
                // By the containers' flush_policy (`flush`); refused as by
                // a memcached started with -F when every one is disabled.
                let mut answer = Vec::new();
                match self.flush_all(i64::from(delay)).await {
                    Ok(true) => write_status(&mut answer, Status::Ok),
                    Ok(false) => write_error(
                        &mut answer,
                        ErrorReply::ClientError("flush_all not allowed"),
                    ),
                    Err(f) => write_error(&mut answer, failure_reply(f)),
                }
                if !noreply {
                    out.extend_from_slice(&answer);
                }
            }
            Command::Version => write_version(out, super::VERSION),
            Command::Verbosity { noreply, .. } => {
                if !noreply {
                    write_status(out, Status::Ok);
                }
            }
            Command::Stats { args } => self.stats(&args, out),
            Command::Quit => return Flow::Close,
            Command::MetaNoop => write_meta_noop(out),
            Command::MetaDebug { key } => self.debug(&key, sep, out).await,
            Command::MetaGet { key, flags } => {
                let facts_of = |item: &Item, now: u64| MetaFacts {
                    cas: Some(item.cas),
                    client_flags: Some(item.flags),
                    ttl: Some(item.ttl(now)),
                    size: Some(item.value.len()),
                    ..MetaFacts::default()
                };
                let now = now();
                let result = match flags.ttl {
                    Some(ttl) => self.touch(&key.bytes, ttl, sep).await,
                    None => self.fetch_one(&key.bytes, sep).await,
                };
                match result {
                    Ok(Some(item)) => {
                        let code = if flags.return_value {
                            MetaCode::Va(item.value.len())
                        } else {
                            MetaCode::Hd
                        };
                        let facts = facts_of(&item, now);
                        write_meta(
                            out,
                            MetaCommand::Get,
                            code,
                            &key,
                            &flags,
                            &facts,
                            &item.value,
                        );
                    }
                    Ok(None) => write_meta(
                        out,
                        MetaCommand::Get,
                        MetaCode::En,
                        &key,
                        &flags,
                        &MetaFacts::default(),
                        b"",
                    ),
                    Err(f) => write_error(out, failure_reply(f)),
                }
            }
            Command::MetaSet {
                key,
                flags,
                mode,
                data,
            } => {
                let mode = match (flags.compare_cas, mode) {
                    (Some(cas), StoreMode::Set | StoreMode::Replace) => StoreMode::Cas(cas),
                    _ => mode,
                };
                let result = self
                    .store(
                        &key.bytes,
                        mode,
                        flags.client_flags.unwrap_or(0),
                        flags.ttl.unwrap_or(0),
                        data,
                        sep,
                    )
                    .await;
                let code = match result {
                    Ok(Outcome::Stored) => MetaCode::Hd,
                    Ok(Outcome::NotStored) => MetaCode::Ns,
                    Ok(Outcome::Exists) => MetaCode::Ex,
                    Ok(Outcome::NotFound) => MetaCode::Nf,
                    Err(f) => return self.error(out, f),
                };
                // `c`: the new item's cas, as memcached (0 when nothing
                // was stored).
                let cas = if code == MetaCode::Hd {
                    self.written
                } else {
                    0
                };
                let facts = MetaFacts {
                    cas: Some(cas),
                    ..MetaFacts::default()
                };
                write_meta(out, MetaCommand::Set, code, &key, &flags, &facts, b"");
            }
            Command::MetaDelete { key, flags } => {
                let code = match self.delete(&key.bytes, flags.compare_cas, sep).await {
                    Ok(Outcome::Stored) => MetaCode::Hd,
                    Ok(Outcome::Exists) => MetaCode::Ex,
                    Ok(_) => MetaCode::Nf,
                    Err(f) => return self.error(out, f),
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
            } => {
                let delta = flags.delta.unwrap_or(1);
                let create = flags
                    .vivify_ttl
                    .map(|ttl| (flags.initial.unwrap_or(0), ttl));
                match self.count(&key.bytes, delta, increment, create, sep).await {
                    Ok(Counted::Value(_, digits)) => {
                        let code = if flags.return_value {
                            MetaCode::Va(digits.len())
                        } else {
                            MetaCode::Hd
                        };
                        // `c`: the counter's new cas, as memcached.
                        let facts = MetaFacts {
                            cas: Some(self.written),
                            ..MetaFacts::default()
                        };
                        write_meta(
                            out,
                            MetaCommand::Arithmetic,
                            code,
                            &key,
                            &flags,
                            &facts,
                            &digits,
                        );
                    }
                    Ok(Counted::NotFound) => write_meta(
                        out,
                        MetaCommand::Arithmetic,
                        MetaCode::Nf,
                        &key,
                        &flags,
                        &MetaFacts::default(),
                        b"",
                    ),
                    Ok(Counted::NonNumeric) => write_error(
                        out,
                        ErrorReply::ClientError("cannot increment or decrement non-numeric value"),
                    ),
                    Err(f) => write_error(out, failure_reply(f)),
                }
            }
        }
        Flow::Continue
    }

    fn error(&self, out: &mut Vec<u8>, f: Failure) -> Flow {
        write_error(out, failure_reply(f));
        Flow::Continue
    }

    fn stats(&self, args: &[&[u8]], out: &mut Vec<u8>) {
        match stats::answer(args.first().copied(), &self.stats) {
            StatsAnswer::Lines(lines) => {
                for (name, value) in lines {
                    write_stat(out, name, value);
                }
                write_status(out, Status::End);
            }
            StatsAnswer::Reset => write_status(out, Status::Reset),
            StatsAnswer::Unknown => write_error(out, ErrorReply::Error),
        }
    }

    /// `me`: what memcached's item debug shows that a row has: `exp` (the
    /// seconds left, -1 for never), `cas`, `size` (the value's bytes).
    async fn debug(&mut self, key: &MetaKey<'_>, sep: &[u8], out: &mut Vec<u8>) {
        match self.fetch_one(&key.bytes, sep).await {
            Ok(Some(item)) => write_meta_debug(
                out,
                key,
                &[
                    ("exp", item.ttl(now()).to_string()),
                    ("cas", item.cas.to_string()),
                    ("size", item.value.len().to_string()),
                ],
            ),
            Ok(None) => write_meta(
                out,
                MetaCommand::Get,
                MetaCode::En,
                key,
                &MetaFlags::default(),
                &MetaFacts::default(),
                b"",
            ),
            Err(f) => write_error(out, failure_reply(f)),
        }
    }

    /// get, gets, gat, gats: the keys in batches of `GET_BATCH`, the answer
    /// bounded by `--max-response-bytes` (beyond it the whole answer is
    /// memcached's `SERVER_ERROR out of memory writing get response`).
    async fn get(
        &mut self,
        keys: &[&[u8]],
        return_cas: bool,
        touch: Option<i32>,
        sep: &[u8],
        out: &mut Vec<u8>,
    ) {
        let mut answer = Vec::new();
        for chunk in keys.chunks(GET_BATCH) {
            let mut asked = Vec::with_capacity(chunk.len());
            for &key in chunk {
                if let Resolved::Key(container, inner) = self.resolve(key) {
                    asked.push((key, container, inner));
                }
            }
            let found = match touch {
                Some(ttl) => self.touch_all(&asked, ttl, sep).await,
                None => self.fetch_all(&asked, sep).await,
            };
            let items = match found {
                Ok(items) => items,
                Err(Failure::Storage(ErrorKind::Storage(ERR_ANSWER_TOO_LARGE))) => {
                    return write_error(out, TOO_LARGE_ANSWER)
                }
                Err(f) => return write_error(out, failure_reply(f)),
            };
            for ((key, _, _), item) in asked.iter().zip(items) {
                if let Some(item) = item {
                    let cas = return_cas.then_some(item.cas);
                    write_value(&mut answer, key, item.flags, &item.value, cas);
                }
            }
            if answer.len() > self.max_answer {
                return write_error(out, TOO_LARGE_ANSWER);
            }
        }
        out.extend_from_slice(&answer);
        write_status(out, Status::End);
    }

    /// flush_all (text and binary): `Ok(false)` when every container's
    /// flush_policy is `disabled`.
    async fn flush_all_uncounted(&mut self, delay: i64) -> Result<bool, Failure> {
        // Indexes opened before the tables were emptied stay valid: a
        // DELETE changes no table's shape.
        super::flush::flush(
            &self.dispatcher,
            &self.containers,
            &self.memory,
            &self.flushes,
            delay,
        )
        .await
    }

    /// The items of keys resolved to containers, read as one batch.
    async fn fetch_all_uncounted(
        &mut self,
        asked: &[(&[u8], usize, &[u8])],
        sep: &[u8],
    ) -> Result<Vec<Option<Item>>, Failure> {
        // A key of a container whose get_policy is disabled is a miss,
        // as the plugin answered it.
        let mut targets = Vec::with_capacity(asked.len());
        let mut enabled = Vec::with_capacity(asked.len());
        for &(_, container, inner) in asked {
            match self.target(container, inner, Kind::Get).await {
                Ok(mut t) => {
                    t.separator = sep;
                    targets.push(t);
                    enabled.push(true);
                }
                Err(Failure::Disabled(_)) => enabled.push(false),
                Err(f) => return Err(f),
            }
        }
        let fetched = ops::fetch_many(&self.dispatcher, &targets, now()).await;
        // Expired rows the read came upon are deleted now, a few per batch:
        // lazily, as memcached drops an expired item it finds.
        let expired = targets.iter().zip(&fetched).filter_map(|(t, f)| match f {
            Ok(ops::Fetched {
                raw: Some(raw),
                item: None,
            }) => Some((t, raw)),
            _ => None,
        });
        for (t, raw) in expired.take(MAX_LAZY_DELETES) {
            if let Err(e) = ops::delete_unchanged(&self.dispatcher, t, raw).await {
                tracing::debug!(
                    ?e,
                    "deleting an expired row failed; it stays until the next try"
                );
            }
        }
        let mut fetched = fetched.into_iter();
        enabled
            .into_iter()
            .map(|enabled| match enabled.then(|| fetched.next()) {
                Some(Some(r)) => r.map(|f| f.item),
                Some(None) => Err(Failure::Storage(ErrorKind::Storage(0))),
                None => Ok(None),
            })
            .collect()
    }

    /// The same, each touched (gat, gats).
    async fn touch_all(
        &mut self,
        asked: &[(&[u8], usize, &[u8])],
        ttl: i32,
        sep: &[u8],
    ) -> Result<Vec<Option<Item>>, Failure> {
        let mut items = Vec::with_capacity(asked.len());
        for &(_, container, inner) in asked {
            items.push(self.touch_in(container, inner, ttl, sep).await?);
        }
        Ok(items)
    }

    async fn fetch_one_uncounted(
        &mut self,
        key: &[u8],
        sep: &[u8],
    ) -> Result<Option<Item>, Failure> {
        let Resolved::Key(container, inner) = self.resolve(key) else {
            return Ok(None);
        };
        let mut t = match self.target(container, inner, Kind::Get).await {
            Ok(t) => t,
            Err(Failure::Disabled(_)) => return Ok(None),
            Err(f) => return Err(f),
        };
        t.separator = sep;
        let fetched = ops::fetch_many(&self.dispatcher, std::slice::from_ref(&t), now()).await;
        match fetched.into_iter().next() {
            Some(Ok(f)) => Ok(f.item),
            Some(Err(f)) => Err(f),
            None => Ok(None),
        }
    }

    async fn store_uncounted(
        &mut self,
        key: &[u8],
        mode: StoreMode,
        flags: u32,
        exptime: i32,
        data: &[u8],
        sep: &[u8],
    ) -> Result<Outcome, Failure> {
        let container = match self.resolve(key) {
            Resolved::Key(c, k) => (c, k),
            Resolved::Switched | Resolved::Unknown => return Ok(Outcome::NotStored),
        };
        let mut t = self.target(container.0, container.1, Kind::Set).await?;
        t.separator = sep;
        let now = now();
        let new = NewRow {
            value: data,
            flags,
            expires: expiry_of(exptime, now),
        };
        let clock = self.clock.clone();
        self.written = 0;
        if mode == StoreMode::Set {
            let row = new.build(&t, &clock);
            let cas = written_cas(&row, &t.layout);
            ops::set(&self.dispatcher, &t, row).await?;
            self.written = cas;
            return Ok(Outcome::Stored);
        }
        let t_ref = &t;
        let mut cas = 0;
        let outcome = ops::read_modify_write(&self.dispatcher, &self.locks, t_ref, now, |item| {
            let mut write = |row: Vec<Value>| {
                cas = written_cas(&row, &t_ref.layout);
                Decision::Write(row, Outcome::Stored)
            };
            match (mode, item) {
                (StoreMode::Add, None) => write(new.build(t_ref, &clock)),
                (StoreMode::Add, Some(_)) => Decision::Answer(Outcome::NotStored),
                (StoreMode::Cas(_), None) => Decision::Answer(Outcome::NotFound),
                (StoreMode::Cas(cas), Some(item)) if item.cas != cas => {
                    Decision::Answer(Outcome::Exists)
                }
                (_, None) => Decision::Answer(Outcome::NotStored),
                (StoreMode::Append | StoreMode::Prepend, Some(item)) => {
                    let mut value = Vec::with_capacity(item.value.len() + data.len());
                    if mode == StoreMode::Append {
                        value.extend_from_slice(&item.value);
                        value.extend_from_slice(data);
                    } else {
                        value.extend_from_slice(data);
                        value.extend_from_slice(&item.value);
                    }
                    // append and prepend keep the flags and the expiry.
                    let kept = NewRow {
                        value: &value,
                        flags: item.flags,
                        expires: item.expires,
                    };
                    write(kept.build(t_ref, &clock))
                }
                (_, Some(_)) => write(new.build(t_ref, &clock)),
            }
        })
        .await?;
        if outcome == Outcome::Stored {
            self.written = cas;
        }
        Ok(outcome)
    }

    /// `delete` (and `md`): `Stored` when deleted, `Exists` on a cas
    /// mismatch, `NotFound`.
    async fn delete_uncounted(
        &mut self,
        key: &[u8],
        compare_cas: Option<u64>,
        sep: &[u8],
    ) -> Result<Outcome, Failure> {
        let Resolved::Key(container, inner) = self.resolve(key) else {
            return Ok(Outcome::NotFound);
        };
        let mut t = self.target(container, inner, Kind::Delete).await?;
        t.separator = sep;
        ops::read_modify_write(
            &self.dispatcher,
            &self.locks,
            &t,
            now(),
            |item| match item {
                // An expired row is deleted too, and answers as missing.
                None => Decision::Delete(Outcome::NotFound),
                Some(item) if compare_cas.is_some_and(|c| c != item.cas) => {
                    Decision::Answer(Outcome::Exists)
                }
                Some(_) => Decision::Delete(Outcome::Stored),
            },
        )
        .await
    }

    /// incr/decr; `create` (an initial value and exptime) stores the
    /// initial value on a miss, as the binary protocol and `ma N` ask.
    async fn count_uncounted(
        &mut self,
        key: &[u8],
        delta: u64,
        increment: bool,
        create: Option<(u64, i32)>,
        sep: &[u8],
    ) -> Result<Counted, Failure> {
        let Resolved::Key(container, inner) = self.resolve(key) else {
            return Ok(Counted::NotFound);
        };
        let mut t = self.target(container, inner, Kind::Set).await?;
        t.separator = sep;
        let clock = self.clock.clone();
        let t_ref = &t;
        let mut cas = 0;
        self.written = 0;
        let integer_value = t
            .index
            .columns
            .get(1)
            .and_then(|&c| t.index.table.columns.get(c))
            .is_some_and(|c| matches!(c.kind, hsd_storage::ColumnKind::Integer { .. }));
        let counted = ops::read_modify_write(&self.dispatcher, &self.locks, t_ref, now(), |item| {
            let Some(item) = item else {
                let Some((initial, exptime)) = create else {
                    return Decision::Answer(Counted::NotFound);
                };
                let digits = initial.to_string().into_bytes();
                let row = NewRow {
                    value: &digits,
                    flags: 0,
                    expires: expiry_of(exptime, now()),
                }
                .build(t_ref, &clock);
                cas = written_cas(&row, &t_ref.layout);
                return Decision::Write(row, Counted::Value(initial, digits));
            };
            // memcached's reading of an item as a number (spaces around
            // it, a `+`), and its rewrite in place: a shorter number is
            // padded with spaces to the value's length (`100` decremented
            // is `99 `), except in an integer value column, which holds
            // the number alone.
            let Some(number) = mc_proto::number::parse_u64(&item.value) else {
                return Decision::Answer(Counted::NonNumeric);
            };
            let next = if increment {
                number.wrapping_add(delta)
            } else {
                number.saturating_sub(delta)
            };
            let digits = next.to_string().into_bytes();
            let stored = if integer_value {
                digits.clone()
            } else {
                mc_proto::number::counter_text(next, item.value.len())
            };
            let row = NewRow {
                value: &stored,
                flags: item.flags,
                expires: item.expires,
            }
            .build(t_ref, &clock);
            cas = written_cas(&row, &t_ref.layout);
            Decision::Write(row, Counted::Value(next, digits))
        })
        .await?;
        if matches!(counted, Counted::Value(..)) {
            self.written = cas;
        }
        Ok(counted)
    }

    async fn touch_uncounted(
        &mut self,
        key: &[u8],
        exptime: i32,
        sep: &[u8],
    ) -> Result<Option<Item>, Failure> {
        let Resolved::Key(container, inner) = self.resolve(key) else {
            return Ok(None);
        };
        self.touch_in(container, inner, exptime, sep).await
    }

    /// Sets a live item's expiry (nothing else: the cas stays); the item.
    async fn touch_in(
        &mut self,
        container: usize,
        key: &[u8],
        exptime: i32,
        sep: &[u8],
    ) -> Result<Option<Item>, Failure> {
        let mut t = self.target(container, key, Kind::Set).await?;
        t.separator = sep;
        let now = now();
        let expires = expiry_of(exptime, now);
        let Some(column) = t.layout.expire else {
            // Without an expiry column nothing expires: touching is looking.
            return match ops::fetch_many(&self.dispatcher, std::slice::from_ref(&t), now)
                .await
                .pop()
            {
                Some(Ok(f)) => Ok(f.item),
                Some(Err(f)) => Err(f),
                None => Ok(None),
            };
        };
        ops::read_modify_write(&self.dispatcher, &self.locks, &t, now, |item| match item {
            None => Decision::Answer(None),
            Some(item) => {
                let mut row = item.row.clone();
                if let Some(cell) = row.get_mut(column) {
                    *cell = Some(expires.to_string().into_bytes());
                }
                let mut touched = item.clone();
                touched.expires = expires;
                Decision::Write(row, Some(touched))
            }
        })
        .await
    }
}

/// The commands as the protocols call them, each counted once by its
/// result (`counters.rs`): every protocol's commands go through these.
impl<B: Backend> McSession<B> {
    pub(super) async fn fetch_all(
        &mut self,
        asked: &[(&[u8], usize, &[u8])],
        sep: &[u8],
    ) -> Result<Vec<Option<Item>>, Failure> {
        let items = self.fetch_all_uncounted(asked, sep).await;
        let counters = &self.stats.counters;
        match &items {
            Ok(items) => items.iter().for_each(|i| counters.get(i.is_some())),
            Err(_) => counters.command("get", "error"),
        }
        items
    }

    pub(super) async fn fetch_one(
        &mut self,
        key: &[u8],
        sep: &[u8],
    ) -> Result<Option<Item>, Failure> {
        let item = self.fetch_one_uncounted(key, sep).await;
        match &item {
            Ok(item) => self.stats.counters.get(item.is_some()),
            Err(_) => self.stats.counters.command("get", "error"),
        }
        item
    }

    pub(super) async fn store(
        &mut self,
        key: &[u8],
        mode: StoreMode,
        flags: u32,
        exptime: i32,
        data: &[u8],
        sep: &[u8],
    ) -> Result<Outcome, Failure> {
        let outcome = self
            .store_uncounted(key, mode, flags, exptime, data, sep)
            .await;
        let command = match mode {
            StoreMode::Set => "set",
            StoreMode::Add => "add",
            StoreMode::Replace => "replace",
            StoreMode::Append => "append",
            StoreMode::Prepend => "prepend",
            StoreMode::Cas(_) => "cas",
        };
        self.stats.counters.command(command, outcome_name(&outcome));
        outcome
    }

    pub(super) async fn delete(
        &mut self,
        key: &[u8],
        compare_cas: Option<u64>,
        sep: &[u8],
    ) -> Result<Outcome, Failure> {
        let outcome = self.delete_uncounted(key, compare_cas, sep).await;
        let result = match &outcome {
            Ok(Outcome::Stored) => "deleted",
            other => outcome_name(other),
        };
        self.stats.counters.command("delete", result);
        outcome
    }

    pub(super) async fn count(
        &mut self,
        key: &[u8],
        delta: u64,
        increment: bool,
        create: Option<(u64, i32)>,
        sep: &[u8],
    ) -> Result<Counted, Failure> {
        let counted = self
            .count_uncounted(key, delta, increment, create, sep)
            .await;
        let result = match &counted {
            Ok(Counted::Value(..)) => "stored",
            Ok(Counted::NotFound) => "not_found",
            Ok(Counted::NonNumeric) | Err(_) => "error",
        };
        let command = if increment { "incr" } else { "decr" };
        self.stats.counters.command(command, result);
        counted
    }

    pub(super) async fn touch(
        &mut self,
        key: &[u8],
        exptime: i32,
        sep: &[u8],
    ) -> Result<Option<Item>, Failure> {
        let item = self.touch_uncounted(key, exptime, sep).await;
        let result = match &item {
            Ok(Some(_)) => "touched",
            Ok(None) => "not_found",
            Err(_) => "error",
        };
        self.stats.counters.command("touch", result);
        item
    }

    pub(super) async fn flush_all(&mut self, delay: i64) -> Result<bool, Failure> {
        let flushed = self.flush_all_uncounted(delay).await;
        let result = match &flushed {
            Ok(true) => "ok",
            Ok(false) | Err(_) => "error",
        };
        self.stats.counters.command("flush_all", result);
        flushed
    }
}

/// A store's or delete's result as the counters name it.
fn outcome_name(outcome: &Result<Outcome, Failure>) -> &'static str {
    match outcome {
        Ok(Outcome::Stored) => "stored",
        Ok(Outcome::NotStored) => "not_stored",
        Ok(Outcome::Exists) => "exists",
        Ok(Outcome::NotFound) => "not_found",
        Err(_) => "error",
    }
}

impl<B: Backend> Drop for McSession<B> {
    fn drop(&mut self) {
        self.stats.counters.connection_closed();
    }
}
