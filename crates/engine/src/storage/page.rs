//! The 8 kB page layout. See docs/format/page.md.
