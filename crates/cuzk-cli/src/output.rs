//! Standard output that ends the process quietly when its reader has gone (see `outln!`).

use std::fmt::Arguments;
use std::io::{ErrorKind, Write};

/// Exit status of a process ended by SIGPIPE (128 + 13), as shells report a pipe writer's end.
const EXIT_BROKEN_PIPE: i32 = 141;

/// Writes `text` and a newline to stdout.
pub fn line(text: Arguments<'_>) {
    write(format_args!("{text}\n"));
}

/// Writes `text` to stdout; a closed pipe ends the process with [`EXIT_BROKEN_PIPE`], any other
/// failure panics as `print!` does.
pub fn write(text: Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    match out.write_fmt(text).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(EXIT_BROKEN_PIPE),
        Err(e) => panic!("failed printing to stdout: {e}"),
    }
}
