//! The reducer: shrinks a failing list of steps to a short one that still
//! shows the same difference (same signature), by removing chunks of steps
//! (delta debugging) and then single steps, replaying each candidate from
//! freshly reset tables.

use anyhow::Result;

use crate::generate::Step;
use crate::runner::{Replay, Runner};

/// Something that replays steps; the runner in real use, a fake in tests.
pub trait Replayer {
    /// The signature of the first difference the steps show, if any.
    fn difference(&mut self, steps: &[Step]) -> Result<Option<String>>;
}

impl Replayer for Runner {
    fn difference(&mut self, steps: &[Step]) -> Result<Option<String>> {
        let r: Replay = self.run(steps)?;
        Ok(r.difference.map(|d| d.signature()))
    }
}

/// Returns the smallest step list found within `budget` replays that still
/// shows `signature`. `steps` must end at the step where it showed.
pub fn reduce<R: Replayer>(
    replayer: &mut R,
    steps: &[Step],
    signature: &str,
    budget: usize,
) -> Result<Vec<Step>> {
    let mut current = steps.to_vec();
    let mut tries = 0;
    let mut chunks = 2usize;
    while current.len() >= 2 && tries < budget {
        let size = current.len().div_ceil(chunks);
        let mut reduced = false;
        let mut start = 0;
        while start < current.len() && tries < budget {
            let end = (start + size).min(current.len());
            let candidate: Vec<Step> = current[..start]
                .iter()
                .chain(&current[end..])
                .cloned()
                .collect();
            tries += 1;
            if !candidate.is_empty()
                && replayer.difference(&candidate)?.as_deref() == Some(signature)
            {
                current = candidate;
                reduced = true;
            } else {
                start = end;
            }
        }
        if !reduced {
            if size == 1 {
                break;
            }
            chunks = (chunks * 2).min(current.len());
        }
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::Line;

    /// Differs when steps 3 and 7 of the original list are both present, in order.
    struct NeedsTwo;

    fn step(n: usize) -> Step {
        Step::Send {
            conn: 0,
            line: Line::new().num(n),
            writes: None,
        }
    }

    impl Replayer for NeedsTwo {
        fn difference(&mut self, steps: &[Step]) -> Result<Option<String>> {
            let has = |n| steps.contains(&step(n));
            Ok((has(3) && has(7)).then(|| "sig".to_string()))
        }
    }

    #[test]
    fn shrinks_to_the_two_needed_steps() {
        let steps: Vec<Step> = (0..20).map(step).collect();
        let out = reduce(&mut NeedsTwo, &steps, "sig", 500).expect("reduce");
        assert_eq!(out, vec![step(3), step(7)]);
    }

    #[test]
    fn budget_bounds_the_work() {
        let steps: Vec<Step> = (0..20).map(step).collect();
        let out = reduce(&mut NeedsTwo, &steps, "sig", 1).expect("reduce");
        assert!(out.len() <= 20);
    }
}
