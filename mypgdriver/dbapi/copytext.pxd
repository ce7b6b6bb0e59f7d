# Rows in COPY's text format (see copytext.pyx), for copyrows.pyx's write_row().
from mypgdriver.protocol.buffer cimport WriteBuffer

# Append one line for `row` (a sequence of values) to `buf`; on an error
# nothing of the row is left in `buf`.
cdef int write_text_row(WriteBuffer buf, object row) except -1
