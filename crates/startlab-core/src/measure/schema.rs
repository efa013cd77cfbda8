//! The table schema, declared once.
//!
//! Every table a run writes is declared with [`table!`]: one line per column with its type, its
//! unit and what it means. The macro generates the columnar table (a `Vec` per column), its row
//! type, and a [`Table`] implementation that walks the columns with their declarations. The
//! Python bindings, the Parquet files and the documentation all read the columns from there, so
//! a new column is one line here plus the line that fills it.
//!
//! "None" has one spelling: an `Option` column, which reaches Python and Parquet as null.
//! Values are finite: an unlimited ssthresh, a slow start that never ended, a flow without a
//! size are null, never `-1`, NaN or infinity.

/// The physical type of a column.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DataType {
    F64,
    I64,
    U64,
    U32,
    U8,
    Str,
}

impl DataType {
    /// The name the bindings and the docs use (`f64`, `i64`, …, `str`).
    pub fn name(self) -> &'static str {
        match self {
            DataType::F64 => "f64",
            DataType::I64 => "i64",
            DataType::U64 => "u64",
            DataType::U32 => "u32",
            DataType::U8 => "u8",
            DataType::Str => "str",
        }
    }
}

/// One column's declaration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: &'static str,
    pub dtype: DataType,
    /// Whether the column may hold nulls ("none").
    pub nullable: bool,
    /// `"ns"`, `"segments"`, `"bytes"`, `"bit/s"`, … or `""` for a plain count, id or name.
    pub unit: &'static str,
    pub doc: &'static str,
}

/// One table's declaration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TableDef {
    pub name: &'static str,
    pub doc: &'static str,
    pub columns: &'static [ColumnDef],
}

/// A column's values, borrowed from its table.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ColumnData<'a> {
    F64(&'a [f64]),
    I64(&'a [i64]),
    U64(&'a [u64]),
    U32(&'a [u32]),
    U8(&'a [u8]),
    Str(&'a [String]),
    OptF64(&'a [Option<f64>]),
    OptI64(&'a [Option<i64>]),
    OptU64(&'a [Option<u64>]),
    OptStr(&'a [Option<String>]),
}

impl ColumnData<'_> {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::F64(v) => v.len(),
            ColumnData::I64(v) => v.len(),
            ColumnData::U64(v) => v.len(),
            ColumnData::U32(v) => v.len(),
            ColumnData::U8(v) => v.len(),
            ColumnData::Str(v) => v.len(),
            ColumnData::OptF64(v) => v.len(),
            ColumnData::OptI64(v) => v.len(),
            ColumnData::OptU64(v) => v.len(),
            ColumnData::OptStr(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every float in the column is finite (no NaN, no infinity).
    pub fn all_finite(&self) -> bool {
        match self {
            ColumnData::F64(v) => v.iter().all(|x| x.is_finite()),
            ColumnData::OptF64(v) => v.iter().flatten().all(|x| x.is_finite()),
            _ => true,
        }
    }
}

/// A Rust type that can be a column.
pub trait ColumnType: Sized {
    const DTYPE: DataType;
    const NULLABLE: bool;
    fn data(values: &[Self]) -> ColumnData<'_>;
}

macro_rules! column_type {
    ($t:ty, $dtype:ident, $nullable:expr, $variant:ident) => {
        impl ColumnType for $t {
            const DTYPE: DataType = DataType::$dtype;
            const NULLABLE: bool = $nullable;
            fn data(values: &[Self]) -> ColumnData<'_> {
                ColumnData::$variant(values)
            }
        }
    };
}
column_type!(f64, F64, false, F64);
column_type!(i64, I64, false, I64);
column_type!(u64, U64, false, U64);
column_type!(u32, U32, false, U32);
column_type!(u8, U8, false, U8);
column_type!(String, Str, false, Str);
column_type!(Option<f64>, F64, true, OptF64);
column_type!(Option<i64>, I64, true, OptI64);
column_type!(Option<u64>, U64, true, OptU64);
column_type!(Option<String>, Str, true, OptStr);

/// A table of the schema: its declaration and its columns in declaration order.
pub trait Table {
    const DEF: TableDef;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Column `i` of [`Table::DEF`]`.columns`.
    fn column(&self, i: usize) -> ColumnData<'_>;
    /// Every column with its declaration.
    fn columns(&self) -> Vec<(&'static ColumnDef, ColumnData<'_>)> {
        Self::DEF
            .columns
            .iter()
            .enumerate()
            .map(|(i, def)| (def, self.column(i)))
            .collect()
    }
}

/// Declares a table: `table! { /// doc \n Name, RowName, "name" { /// doc \n column: Type = "unit", … } }`.
macro_rules! table {
    (
        #[doc = $doc:literal]
        $table:ident, $row:ident, $name:literal {
            $( #[doc = $cdoc:literal] $col:ident : $ty:ty = $unit:literal ),* $(,)?
        }
    ) => {
        #[doc = $doc]
        #[doc = ""]
        #[doc = "Columnar: element `i` of every vector belongs to row `i`."]
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $table {
            $( #[doc = $cdoc] pub $col: Vec<$ty>, )*
        }

        #[doc = concat!("One row of [`", stringify!($table), "`].")]
        #[derive(Clone, Debug, PartialEq)]
        pub struct $row {
            $( #[doc = $cdoc] pub $col: $ty, )*
        }

        impl $table {
            pub fn push(&mut self, row: $row) {
                $( self.$col.push(row.$col); )*
            }
            pub fn len(&self) -> usize {
                $crate::measure::schema::first_len(&[$( self.$col.len() ),*])
            }
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
            /// Row `i`, copied out.
            pub fn row(&self, i: usize) -> $row {
                $row { $( $col: self.$col[i].clone(), )* }
            }
            /// Every row, copied out.
            pub fn rows(&self) -> Vec<$row> {
                (0..self.len()).map(|i| self.row(i)).collect()
            }
        }

        impl $crate::measure::schema::Table for $table {
            const DEF: $crate::measure::schema::TableDef = $crate::measure::schema::TableDef {
                name: $name,
                doc: $doc,
                columns: &[ $( $crate::measure::schema::ColumnDef {
                    name: stringify!($col),
                    dtype: <$ty as $crate::measure::schema::ColumnType>::DTYPE,
                    nullable: <$ty as $crate::measure::schema::ColumnType>::NULLABLE,
                    unit: $unit,
                    doc: $cdoc,
                } ),* ],
            };
            fn len(&self) -> usize {
                $table::len(self)
            }
            fn column(&self, i: usize) -> $crate::measure::schema::ColumnData<'_> {
                let columns = [ $( <$ty as $crate::measure::schema::ColumnType>::data(&self.$col) ),* ];
                columns[i]
            }
        }
    };
}
pub(crate) use table;

#[doc(hidden)]
pub fn first_len(lens: &[usize]) -> usize {
    debug_assert!(
        lens.windows(2).all(|w| w[0] == w[1]),
        "columns of unequal length"
    );
    lens.first().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    table! {
        /// A table for the tests.
        Example, ExampleRow, "example" {
            /// A time.
            time_ns: i64 = "ns",
            /// Maybe a value.
            value: Option<f64> = "segments",
            /// A name.
            name: String = "",
        }
    }

    #[test]
    fn a_declared_table_walks_its_columns_in_order() {
        let mut t = Example::default();
        t.push(ExampleRow {
            time_ns: 5,
            value: None,
            name: "a".into(),
        });
        t.push(ExampleRow {
            time_ns: 7,
            value: Some(1.5),
            name: "b".into(),
        });
        assert_eq!(t.len(), 2);
        assert!(!t.is_empty());
        assert_eq!(t.rows()[0].time_ns, 5);
        let names: Vec<&str> = Example::DEF.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, ["time_ns", "value", "name"]);
        let value = &Example::DEF.columns[1];
        assert!(value.nullable && value.dtype == DataType::F64 && value.unit == "segments");
        assert!(!Example::DEF.columns[0].nullable);
        assert_eq!(t.column(1), ColumnData::OptF64(&[None, Some(1.5)]));
        assert_eq!(t.row(1).name, "b");
        assert_eq!(Example::DEF.columns[2].doc, " A name.");
    }

    #[test]
    fn non_finite_values_are_found() {
        assert!(ColumnData::OptF64(&[None, Some(1.0)]).all_finite());
        assert!(!ColumnData::F64(&[1.0, f64::INFINITY]).all_finite());
        assert!(!ColumnData::OptF64(&[Some(f64::NAN)]).all_finite());
    }
}
