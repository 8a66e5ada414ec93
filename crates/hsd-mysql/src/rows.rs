//! A result row as the executor sees it (`RowView`): the opened columns,
//! the filter verdict, the locator and exact values, wherever the statement
//! put them.

use hs_proto::Value;
use hsd_storage::scan_sql::ScanLayout;
use hsd_storage::{FilterVerdict, RowView};
use mysql_wire::TextRow;

/// Where the opened columns are in a result row.
#[derive(Clone, Copy)]
pub(super) enum Columns<'a> {
    /// Opened column `i` is at `base + i` (our own SELECTs).
    Offset(usize),
    /// A HANDLER row has every table column: opened column `i` is table
    /// column `opened[i]`, at that position unless the table changed since
    /// it was opened (`remap`, by name).
    Table {
        opened: &'a [usize],
        remap: Option<&'a [Option<usize>]>,
    },
}

pub(super) struct TextRowView<'a> {
    pub(super) payload: &'a [u8],
    pub(super) row: &'a TextRow,
    pub(super) columns: Columns<'a>,
    pub(super) ncols: usize,
    pub(super) layout: ScanLayout,
}

impl RowView for TextRowView<'_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        let pos = match self.columns {
            Columns::Offset(base) => base + i,
            Columns::Table { opened, remap } => {
                let c = opened[i];
                match remap {
                    None => c,
                    Some(map) => map.get(c).copied().flatten()?,
                }
            }
        };
        self.row.get(self.payload, pos)
    }

    fn filter_state(&self) -> FilterVerdict {
        if !self.layout.has_state {
            return FilterVerdict::Pass;
        }
        let n = self
            .row
            .get(self.payload, self.ncols)
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        FilterVerdict::from_state(n)
    }

    fn locator(&self) -> Vec<Value> {
        let start = self.after_opened();
        (start..start + self.layout.locator_len)
            .map(|i| self.row.get(self.payload, i).map(<[u8]>::to_vec))
            .collect()
    }

    fn exact(&self, k: usize) -> Option<&[u8]> {
        if k >= self.layout.exact_len {
            return None;
        }
        self.row.get(
            self.payload,
            self.after_opened() + self.layout.locator_len + k,
        )
    }
}

impl TextRowView<'_> {
    /// Where the columns after the opened ones (and the filter state)
    /// start: the locator, then the exact values.
    fn after_opened(&self) -> usize {
        let base = match self.columns {
            Columns::Offset(base) => base,
            Columns::Table { .. } => 0,
        };
        base + self.ncols + usize::from(self.layout.has_state)
    }
}
