//! The lockstep test's clients: many depth-1 clients, each with a
//! connection to each port, take steps together; in a step some write rows
//! of their own and the others read rows nobody writes in that step. So
//! every answer is fixed whatever order a server runs a step's requests in:
//! a read sees exactly the writes answered in earlier steps. hsd's tests
//! hold the answers to the original plugin's, on one server and with reads
//! on replicas.

use crate::generate::Port;
use crate::rng::Rng;
use crate::target::{self, Connection, Endpoint};
use std::sync::{Arc, Barrier};

/// Clients, rows each owns, steps.
pub const CLIENTS: usize = 16;
pub const ROWS: usize = 4;
pub const STEPS: usize = 40;

/// The table the clients use, named `ls` in the endpoint's db.
pub const TABLE_SQL: &str =
    "CREATE TABLE ls (id INT NOT NULL PRIMARY KEY, n INT NOT NULL, s VARCHAR(20) NOT NULL)";

/// The table's rows before the first step, as SQL `VALUES` tuples.
pub fn seed_rows() -> Vec<String> {
    (0..CLIENTS * ROWS)
        .map(|id| format!("({id}, {}, 's{id}')", id % 7))
        .collect()
}

/// The request client `c` sends in step `k`. A client writes in the steps
/// where `c + k` is even, only rows of its own; otherwise it reads rows of
/// clients that do not write in that step.
pub fn request(seed: u64, c: usize, k: usize) -> (Port, String) {
    let mut rng = Rng::new(seed * 100_000 + (c * 1_000 + k) as u64);
    let row = |owner: usize, rng: &mut Rng| owner * ROWS + rng.below(ROWS);
    if (c + k).is_multiple_of(2) {
        let r = row(c, &mut rng);
        let line = match rng.below(6) {
            0 => format!(
                "1\t=\t1\t{r}\t1\t0\tU\t{}\ts{}",
                rng.below(99),
                rng.below(99)
            ),
            1 => format!(
                "1\t=\t1\t{r}\t1\t0\tU?\t{}\tq{}",
                rng.below(99),
                rng.below(99)
            ),
            2 => format!("1\t=\t1\t{r}\t1\t0\t+\t{}\t", rng.below(9)),
            3 => format!("1\t=\t1\t{r}\t1\t0\t+?\t{}\t", rng.below(9)),
            4 => format!("1\t=\t1\t{r}\t1\t0\t-\t{}\t", rng.below(9)),
            _ => format!("1\t=\t1\t{r}\t1\t0\tU\t{}\tx", rng.below(9)),
        };
        return (Port::Write, line);
    }
    // Readers read the rows of clients that read in this step.
    let owner = |rng: &mut Rng| loop {
        let o = rng.below(CLIENTS);
        if (o + k) % 2 == 1 {
            return o;
        }
    };
    let o = owner(&mut rng);
    let line = match rng.below(4) {
        0 | 1 => format!("0\t=\t1\t{}", row(o, &mut rng)),
        2 => format!("0\t>=\t1\t{}\t{ROWS}\t0", o * ROWS),
        _ => {
            let (a, b) = (owner(&mut rng), owner(&mut rng));
            format!(
                "0\t=\t1\t0\t3\t0\t@\t0\t2\t{}\t{}",
                row(a, &mut rng),
                row(b, &mut rng)
            )
        }
    };
    (Port::Read, line)
}

/// Runs the lockstep on one endpoint: every client's `request -> answer`
/// lines, step by step. Panics on a connection that fails (a test's
/// failure).
pub fn answers(endpoint: &Endpoint, seed: u64) -> Vec<Vec<String>> {
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (endpoint, barrier) = (endpoint.clone(), barrier.clone());
            std::thread::spawn(move || {
                let db = endpoint.db.clone();
                let mut read = target::open(&endpoint, Port::Read).expect("connect");
                let mut write = target::open(&endpoint, Port::Write).expect("connect");
                let open = |conn: &mut Connection, line: String| {
                    assert_eq!(conn.request(line.as_bytes()).expect("P"), b"0\t1");
                };
                open(&mut read, format!("P\t0\t{db}\tls\tPRIMARY\tid,n,s"));
                open(&mut write, format!("P\t1\t{db}\tls\tPRIMARY\tn,s"));
                (0..STEPS)
                    .map(|k| {
                        let (port, line) = request(seed, c, k);
                        barrier.wait();
                        let conn = match port {
                            Port::Read => &mut read,
                            Port::Write => &mut write,
                        };
                        let answer = conn.request(line.as_bytes()).expect("answer");
                        // Every client has its answer before the next step.
                        barrier.wait();
                        format!("{line} -> {}", String::from_utf8_lossy(&answer))
                    })
                    .collect::<Vec<String>>()
            })
        })
        .collect();
    clients
        .into_iter()
        .map(|t| t.join().expect("lockstep client"))
        .collect()
}
