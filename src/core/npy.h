// .npy / .npz tensor files: what NumPy and PyTorch users already have on disk.
//
// Reading accepts format versions 1.0, 2.0 and 3.0, little- and big-endian data ('<', '>', '|', '='),
// every ferry dtype (f2 f4 f8, i1..i8, u1..u8, b1) and Fortran-ordered arrays (transposed to C order on
// read). Everything a file claims is checked against the bytes it really has before anything is
// allocated, so a truncated or lying file is an error that names the file, never a crash or an
// over-read. .npz archives may hold stored or deflated members (np.savez / np.savez_compressed), with
// or without zip64 records.
//
// Writing always produces little-endian C-order version 1.0 files (2.0 only when the header needs it).
// bfloat16 has no NumPy dtype (ml_dtypes' bfloat16 saves as an opaque '<V2'), so a bfloat16 tensor is
// written as float32: the conversion is exact, and the file opens anywhere. Callers that care (the CLI)
// say so to the user; `npy_storage_dtype` tells them which dtype lands on disk.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace ferry {

// The dtype a tensor of `t` is stored as in .npy (t itself, except bfloat16 -> float32).
DType npy_storage_dtype(DType t);

// Parses a whole .npy image held in memory; `label` names it in errors (a path or "a.npz:x.npy").
Result<Tensor> decode_npy(const void* data, size_t size, const std::string& label);
// Serialises a tensor to a .npy image.
Result<std::string> encode_npy(const Tensor& t);

// Reads one .npy file. Reads the header first and then the data straight into the tensor.
Result<Tensor> read_npy(const std::string& path);
// The dims a .npy file holds, from its validated header alone (the data is not read).
Result<std::vector<int64_t>> read_npy_dims(const std::string& path);
Status write_npy(const std::string& path, const Tensor& t);

// The arrays of an .npz archive in archive order, keyed by member name without its ".npy" suffix.
// Members whose names do not end in ".npy" (and directories) are skipped: np.load ignores them too.
Result<std::vector<std::pair<std::string, Tensor>>> read_npz(const std::string& path);
// Writes an .npz archive, members "<key>.npy", deflated when `compress` (like np.savez_compressed).
Status write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays,
                 bool compress = false);

}  // namespace ferry
