// Boxes inside row-major arrays: bounds checks with the model's messages, and a cursor that
// walks the rows of a box so that copies move whole contiguous rows.
#pragma once

#include <pld/kernel.hpp>
#include <pld/types.hpp>

#include <algorithm>
#include <string>

namespace pld::detail {

/// Throws UsageError unless `offsets` has the rank of `shape`, is non-negative, `extent` is
/// non-negative, and `offsets + extent <= shape` in every dimension. `operand` names the operand
/// ("src", "signal", ...) and `region` what is addressed in it ("box", "cell", "subregion");
/// `remedy` is appended to an out-of-range message.
void check_box(const std::string& op, const char* operand, const char* region, const Dims& shape, const Dims& offsets,
               const Dims& extent, const char* remedy);

/// Checks that `peer` is a domain-local rank of `state`.
void check_peer(const std::string& op, const DomainState& state, int peer);

/// The domain state of a window operand, or a UsageError when used outside a kernel.
const DomainState& bound_state(const std::string& op, const WindowDesc& w);

/// `src dtype (..) must match target dtype (..)`.
void check_dtype(const char* api, DType src, DType dst);
/// AtomicType in range, and Add only for fp32/fp16/bf16/int32/int16/int8.
void check_atomic(const char* api, AtomicType atomic, DType dtype);

/// Row-major strides of `shape` (in elements).
Dims strides_of(const Dims& shape);

/// Walks the rows (last-dimension runs) of box `[offsets, offsets + extent)` of an array.
class RowCursor {
 public:
  RowCursor(const Dims& shape, const Dims& offsets, const Dims& extent);
  /// Element offset of the current row's first element.
  Index offset() const { return linear_; }
  void next();
  /// Positions the cursor on row `row` (rows are numbered in row-major order).
  void seek(Index row);

 private:
  Dims stride_, extent_, index_;
  Index linear_ = 0;
};

/// True when the box is one contiguous run of memory.
bool box_contiguous(const Dims& shape, const Dims& extent);

/// Calls `fn(dst_elem, src_elem, count)` for every run of a copy between two boxes of equal
/// element count and equal last extent, `chunk_rows` x `chunk_cols` blocks at a time (0 = all).
/// A copy between two contiguous boxes is one run.
template <class Fn>
void for_each_run(const Dims& dshape, const Dims& doff, const Dims& dext, const Dims& sshape, const Dims& soff,
                  const Dims& sext, Index chunk_rows, Index chunk_cols, Fn&& fn) {
  const Index n = dext.numel();
  if (n == 0) return;
  const Index cols = dext.empty() ? 1 : dext.back();  // a 0-dimensional box is one element
  const Index rows = n / cols;
  const bool whole = (chunk_rows == 0 || chunk_rows >= rows) && (chunk_cols == 0 || chunk_cols >= cols);
  if (whole && box_contiguous(dshape, dext) && box_contiguous(sshape, sext)) {
    RowCursor d(dshape, doff, dext), s(sshape, soff, sext);
    fn(d.offset(), s.offset(), n);
    return;
  }
  const Index cr = (chunk_rows <= 0 || chunk_rows > rows) ? rows : chunk_rows;
  const Index cc = (chunk_cols <= 0 || chunk_cols > cols) ? cols : chunk_cols;
  RowCursor d(dshape, doff, dext), s(sshape, soff, sext);
  for (Index r0 = 0; r0 < rows; r0 += cr) {
    const Index r1 = std::min(rows, r0 + cr);
    for (Index c0 = 0; c0 < cols; c0 += cc) {
      const Index len = std::min(cols, c0 + cc) - c0;
      d.seek(r0);
      s.seek(r0);
      for (Index r = r0; r < r1; ++r, d.next(), s.next()) fn(d.offset() + c0, s.offset() + c0, len);
    }
  }
}

/// Debug mode (call it when debug_checks()): throws UsageError naming `api` when box `[offsets,
/// offsets + extent)` of the rank-local array `src`, which `api` reads, overlaps the destination of
/// a non-blocking get not yet completed by system::quiet (rank/nbi.h).
void check_nbi_read(const char* api, const LocalDesc& src, const Dims& offsets, const Dims& extent);

/// All-zero offsets of `shape`'s rank.
Dims zeros_like(const Dims& shape);

/// UsageError unless chunk_rows and chunk_cols are >= 0, and both > 0 with `pipeline`.
void check_chunks(const char* api, Index chunk_rows, Index chunk_cols, bool pipeline);

/// The boxes of a put or get on both sides: the window's and the local array's offsets and the
/// common extent.
struct Region {
  Dims window_offsets, local_offsets, shape;
};
/// Validates the region arguments of a put or get (`shape` null: the full-slice form, equal
/// shapes) and returns the boxes; messages name `api` and the sides.
Region region_of(const char* api, const char* window_side, const char* local_side, const Dims& window_shape,
                 const Dims& local_shape, const Dims* window_offsets, const Dims* local_offsets, const Dims* shape);

/// `[1, ..., 1, extent...]` with `rank` dimensions (a low-rank operand landing on trailing dims).
Dims pad_leading(const Dims& extent, int rank);

}  // namespace pld::detail
