//! What memcached's commands do to rows, as the executor's finds and
//! writes: one place for every front-end syntax (classic and meta).
//!
//! A get is a find by the whole key (`=`, limit 1); all keys of a
//! multi-get travel as one batch. `set` is an update by key, and an insert
//! when no row was there. Everything that depends on what the row holds
//! (add, replace, append, prepend, cas, incr, decr, touch, and delete when
//! rows expire) reads the row, decides, and writes it back with filters
//! that compare every column it read (`F` filters, as a HandlerSocket
//! client would): when the row changed meanwhile, the write changes
//! nothing and the command runs again from the read, at most
//! `MAX_ATTEMPTS` times. Columns that cannot be compared (BLOB/TEXT, NULL)
//! are not guarded; a cas column, when the container has one, always is.
//! Memcached's own read-modify-writes of one key take turns (`KeyLocks`,
//! shared by every loop), so that they do not keep failing each other's
//! guards: the guards are for what SQL and HandlerSocket change meanwhile.

use super::answer::McAnswer;
use super::fit::{self, Misfit};
use super::item::{row_of, CasClock, Item, Layout};
use super::memory::MemoryItems;
use crate::dispatch::Dispatcher;
use crate::exec::{Done, ReadTask, WriteOp, WriteTask};
use hs_proto::{
    ErrorKind, FilterKind, FilterOp, FilterSpec, FindOp, FindRequest, InsertRequest, ModifyOp,
    ModifySpec, Value,
};
use hsd_storage::{Backend, OpenedIndex, ERR_DUPLICATE_KEY};
use std::sync::Arc;

/// Reads and guarded writes of one command before it gives up.
const MAX_ATTEMPTS: usize = 16;
/// Rounds of update-then-insert one `set` runs at most: a round runs
/// again only when its insert met a duplicate and its update then found
/// no row, which a race of sets alone does not make twice in a row.
const SET_ROUNDS: usize = 4;
/// Locks the keys of read-modify-writes are spread over.
const KEY_LOCKS: usize = 4096;

/// Turns for the read-modify-writes of one key (keys hashed to one of
/// `KEY_LOCKS` locks; two keys sharing one only wait for each other).
pub(crate) struct KeyLocks(Vec<tokio::sync::Mutex<()>>);

impl KeyLocks {
    pub(crate) fn new() -> KeyLocks {
        KeyLocks(
            (0..KEY_LOCKS)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
        )
    }

    /// Waits for the turn of `key` in the table `index` opens.
    pub(crate) async fn turn(
        &self,
        index: &OpenedIndex,
        key: &[u8],
    ) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        index.table.db.hash(&mut hasher);
        index.table.name.hash(&mut hasher);
        key.hash(&mut hasher);
        self.0[(hasher.finish() as usize) % KEY_LOCKS].lock().await
    }
}

/// One key of one container.
pub(crate) struct Target<'a> {
    pub(crate) index: Arc<OpenedIndex>,
    /// How the backend stores text (`fit`).
    pub(crate) text: fit::TextRules,
    pub(crate) layout: Layout,
    pub(crate) separator: &'a [u8],
    pub(crate) key: &'a [u8],
    /// Where the item is kept instead of the table (`cache_only`): the
    /// store and the container's number.
    pub(crate) memory: Option<(Arc<MemoryItems>, usize)>,
}

/// Why a command could not be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The storage refused (the number a HandlerSocket client would see).
    Storage(ErrorKind),
    /// The row changed under every attempt.
    Contended,
    /// The key is not one the key column stores as given (`fit`): refused
    /// as memcached refuses a malformed key.
    BadKey,
    /// The row would not read back as written (`check_fits`).
    Unkept(&'static str),
    /// The container cannot be served (its index is not unique on the key).
    Unusable(&'static str),
    /// The container's policy for the command is `disabled` (`policy`).
    Disabled(&'static str),
}

/// What a command decided, given the item (None: missing or expired).
pub(crate) enum Decision<T> {
    Answer(T),
    /// Write this row (all opened columns), then answer.
    Write(Vec<Value>, T),
    /// Delete the row, then answer.
    Delete(T),
}

fn by_key(key: &[u8], filters: Vec<FilterSpec>, modify: Option<ModifySpec>) -> FindRequest {
    FindRequest {
        op: FindOp::Eq,
        keys: vec![Some(key.to_vec())],
        limit: 1,
        offset: 0,
        in_clause: None,
        filters,
        modify,
    }
}

/// A row read by key: the raw columns and, when not expired, the item.
pub(crate) struct Fetched {
    pub(crate) raw: Option<Vec<Value>>,
    pub(crate) item: Option<Item>,
}

/// Reads the keys, in one batch (those kept in memory from there); each
/// answer in order.
pub(crate) async fn fetch_many<B: Backend>(
    dispatcher: &Dispatcher<B, McAnswer>,
    targets: &[Target<'_>],
    now: u64,
) -> Vec<Result<Fetched, Failure>> {
    let tasks = targets
        .iter()
        .filter(|t| t.memory.is_none())
        .map(|t| ReadTask::new(t.index.clone(), by_key(t.key, Vec::new(), None)))
        .collect::<Vec<_>>();
    let answers = if tasks.is_empty() {
        Vec::new()
    } else {
        dispatcher.reads(tasks).await
    };
    let mut answers = answers.iter();
    targets
        .iter()
        .map(|t| {
            if let Some((memory, container)) = &t.memory {
                return Ok(memory.fetch(*container, t.key, &t.layout, t.separator, now));
            }
            let Some(answer) = answers.next() else {
                return Err(Failure::Storage(ErrorKind::Storage(0)));
            };
            if let Some(kind) = answer.failure() {
                return Err(Failure::Storage(kind));
            }
            let Some(row) = answer.first_row() else {
                return Ok(Fetched {
                    raw: None,
                    item: None,
                });
            };
            Ok(Fetched {
                item: Item::from_row(&row, &t.layout, t.separator, now),
                raw: Some(row.iter().map(|c| c.map(<[u8]>::to_vec)).collect()),
            })
        })
        .collect()
}

async fn write_one<B: Backend>(
    dispatcher: &Dispatcher<B, McAnswer>,
    index: &Arc<OpenedIndex>,
    op: WriteOp,
) -> Result<Done, Failure> {
    let task = WriteTask {
        index: index.clone(),
        op,
    };
    let answer = dispatcher.writes(vec![task]).await.into_iter().next();
    match answer {
        Some(a) => match (a.failure(), a.done()) {
            (Some(kind), _) => Err(Failure::Storage(kind)),
            (None, Some(done)) => Ok(done),
            (None, None) => Err(Failure::Storage(ErrorKind::Storage(0))),
        },
        None => Err(Failure::Storage(ErrorKind::Storage(0))),
    }
}

fn is_duplicate(f: &Failure) -> bool {
    *f == Failure::Storage(ErrorKind::Storage(ERR_DUPLICATE_KEY))
}

fn insert(row: Vec<Value>) -> WriteOp {
    WriteOp::Insert(InsertRequest {
        count: row.len() as u32,
        values: row,
    })
}

fn update(key: &[u8], filters: Vec<FilterSpec>, row: Vec<Value>) -> WriteOp {
    WriteOp::Modify(by_key(
        key,
        filters,
        Some(ModifySpec {
            op: Some(ModifyOp::Update),
            returning: false,
            values: row,
        }),
    ))
}

fn delete(key: &[u8], filters: Vec<FilterSpec>) -> WriteOp {
    WriteOp::Modify(by_key(
        key,
        filters,
        Some(ModifySpec {
            op: Some(ModifyOp::Delete),
            returning: false,
            values: Vec::new(),
        }),
    ))
}

/// `F = <value read>` for every filter column that can be compared.
fn guard(index: &OpenedIndex, raw: &[Value]) -> Vec<FilterSpec> {
    index
        .filter_columns
        .iter()
        .enumerate()
        .filter_map(|(i, &column)| {
            let value = raw.get(i + 1)?.as_ref()?;
            if index.table.columns[column].is_blob {
                return None;
            }
            Some(FilterSpec {
                kind: FilterKind::Skip,
                op: FilterOp::Eq,
                column: i as u32,
                value: Some(value.clone()),
            })
        })
        .collect()
}

/// Deletes the row read as `raw` unless it changed since: an expired row
/// a read came upon (the expiry column is among those compared, so a row
/// touched or stored again meanwhile stays).
pub(crate) async fn delete_unchanged<B: Backend>(
    dispatcher: &Dispatcher<B, McAnswer>,
    t: &Target<'_>,
    raw: &[Value],
) -> Result<(), Failure> {
    if t.memory.is_some() {
        // An expired item in memory went when it was read.
        return Ok(());
    }
    write_one(dispatcher, &t.index, delete(t.key, guard(&t.index, raw)))
        .await
        .map(|_| ())
}

/// MySQL's ER_DATA_TOO_LONG: what a value longer than its column is
/// answered with (`SERVER_ERROR object too large for cache`).
pub(crate) const ERR_DATA_TOO_LONG: u32 = 1406;

/// Refuses a row that the table would not keep as given (`fit`): a value
/// longer than its column (a MySQL or MariaDB server would cut it and
/// answer done, hsd's sessions being as lenient as the original plugin's;
/// memcached refuses an item too large rather than store part of it), a
/// value its column would convert, or no value for a value column that
/// cannot be NULL (a value with fewer separators than the container has
/// value columns leaves the rest NULL: `item::Item::from_row` leaves
/// trailing NULLs out when it joins them again).
fn check_fits(t: &Target<'_>, row: &[Value]) -> Result<(), Failure> {
    for (i, v) in row.iter().enumerate() {
        let Some(meta) = t
            .index
            .columns
            .get(i)
            .and_then(|&c| t.index.table.columns.get(c))
        else {
            continue;
        };
        let is_value = (1..=t.layout.values).contains(&i);
        let Some(v) = v else {
            if is_value && !meta.nullable {
                return Err(Failure::Unkept(
                    "the value has fewer parts than the container has value columns",
                ));
            }
            continue;
        };
        match fit::value_fits(t.text, meta, v) {
            Ok(()) => {}
            Err(Misfit::TooLong) if i == 0 || is_value => {
                return Err(Failure::Storage(ErrorKind::Storage(ERR_DATA_TOO_LONG)))
            }
            Err(_) if i == 0 => return Err(Failure::BadKey),
            Err(_) if is_value => {
                return Err(Failure::Unkept(
                    "the value is not one its column keeps as given",
                ))
            }
            Err(_) => {
                return Err(Failure::Unkept(
                    "the flags or expiry do not fit the container's columns",
                ))
            }
        }
    }
    Ok(())
}

/// `set`: an update by key, else an insert; when the insert meets a
/// duplicate (another `set` of the same new key inserted first), the
/// update again, which must then find the row: the set is answered done
/// only when one of its statements changed a row. An update that finds
/// nothing after a duplicate means the row that refused the insert is gone
/// again (its group rolled back, or it was deleted meanwhile) or the
/// duplicate is in another unique index of the table; the whole round runs
/// again, at most `SET_ROUNDS` times, and a duplicate every time with no
/// row under the key is answered as not kept.
pub(crate) async fn set<B: Backend>(
    dispatcher: &Dispatcher<B, McAnswer>,
    t: &Target<'_>,
    row: Vec<Value>,
) -> Result<(), Failure> {
    if let Some((memory, container)) = &t.memory {
        return memory.set(*container, t.key, row);
    }
    check_fits(t, &row)?;
    for _ in 0..SET_ROUNDS {
        let updated =
            write_one(dispatcher, &t.index, update(t.key, Vec::new(), row.clone())).await?;
        if updated != Done::Modified(0) {
            return Ok(());
        }
        match write_one(dispatcher, &t.index, insert(row.clone())).await {
            Ok(_) => return Ok(()),
            Err(f) if is_duplicate(&f) => continue,
            Err(f) => return Err(f),
        }
    }
    Err(Failure::Unkept(
        "the row's values are another row's in a unique index of the table",
    ))
}

/// Reads the row, lets `decide` choose, and writes guarded; again when
/// the row changed meanwhile.
pub(crate) async fn read_modify_write<B: Backend, T>(
    dispatcher: &Dispatcher<B, McAnswer>,
    locks: &KeyLocks,
    t: &Target<'_>,
    now: u64,
    mut decide: impl FnMut(Option<&Item>) -> Decision<T>,
) -> Result<T, Failure> {
    if let Some((memory, container)) = &t.memory {
        return memory.read_modify_write(*container, t.key, &t.layout, t.separator, now, decide);
    }
    let _turn = locks.turn(&t.index, t.key).await;
    for _ in 0..MAX_ATTEMPTS {
        let fetched = fetch_many(dispatcher, std::slice::from_ref(t), now)
            .await
            .pop()
            .unwrap_or(Err(Failure::Contended))?;
        let (op, answer) = match decide(fetched.item.as_ref()) {
            Decision::Answer(answer) => return Ok(answer),
            Decision::Write(row, answer) => {
                check_fits(t, &row)?;
                match &fetched.raw {
                    None => (insert(row), answer),
                    Some(raw) => (update(t.key, guard(&t.index, raw), row), answer),
                }
            }
            Decision::Delete(answer) => match &fetched.raw {
                None => return Ok(answer),
                Some(raw) => (delete(t.key, guard(&t.index, raw)), answer),
            },
        };
        match write_one(dispatcher, &t.index, op).await {
            Ok(Done::Modified(0)) => continue,
            Ok(_) => return Ok(answer),
            Err(f) if is_duplicate(&f) => continue,
            Err(f) => return Err(f),
        }
    }
    Err(Failure::Contended)
}

/// The row a memcached write stores.
pub(crate) struct NewRow<'a> {
    pub(crate) value: &'a [u8],
    pub(crate) flags: u32,
    pub(crate) expires: u64,
}

impl NewRow<'_> {
    pub(crate) fn build(&self, t: &Target<'_>, clock: &CasClock) -> Vec<Value> {
        row_of(
            t.key,
            self.value,
            self.flags,
            self.expires,
            clock.next(),
            &t.layout,
            t.separator,
        )
    }
}
