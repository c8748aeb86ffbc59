// .npy/.npz: round trips for every dtype, NumPy-written archives, big-endian and Fortran data, and
// hostile files (every truncation, flipped bytes, lying and absurd shapes) that must give errors
// naming the file, never crashes or over-reads (run under ASan to see the latter).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/npy.h"
#include "core/shape.h"
#include "unit/npy_numpy_fixtures.h"

namespace ferry {
namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  static std::string dir = [] {
    std::string d = (fs::temp_directory_path() / ("ferry_npy_test_" + std::to_string(getpid()))).string();
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A .npy image with a hand-written header (version 1.0, padded like NumPy's) and raw data.
std::string npy_with_header(const std::string& dict, const std::string& data, int major = 1) {
  std::string h = dict;
  size_t fixed = major == 1 ? 10 : 12;
  while ((fixed + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  if (major > 1) out += std::string(2, '\0');
  return out + h + data;
}

Tensor sample(DType t, std::vector<int64_t> dims) {
  Tensor x(t, dims);
  auto* p = static_cast<unsigned char*>(x.raw());
  for (size_t i = 0; i < x.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 37 + 11);
  if (t == DType::kBool)
    for (size_t i = 0; i < x.nbytes(); ++i) p[i] &= 1;
  if (t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16)  // avoid NaN payload quirks
    for (int64_t i = 0; i < x.numel(); ++i) {
      dispatch_floating(t, [&](auto tag) {
        using T = decltype(tag);
        x.data<T>()[i] = T(static_cast<float>(i) * 0.25f - 3.0f);
      });
    }
  return x;
}

TEST(Npy, RoundTripEveryDtypeAndRank) {
  const DType types[] = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt8,   DType::kInt16,
                         DType::kInt32,   DType::kInt64,   DType::kUInt8,   DType::kUInt16, DType::kUInt32,
                         DType::kUInt64,  DType::kBool};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {2, 0, 4}, {1, 2, 3, 2}};
  for (DType t : types)
    for (const auto& dims : shapes) {
      Tensor x = sample(t, dims);
      auto bytes = encode_npy(x);
      ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
      EXPECT_EQ(bytes->find("\n") + 1, bytes->size() - x.nbytes());
      EXPECT_EQ((bytes->size() - x.nbytes()) % 64, 0u) << "header must be 64-byte aligned";
      auto y = decode_npy(bytes->data(), bytes->size(), "mem");
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      EXPECT_TRUE(x.same_as(*y)) << x.describe() << " vs " << y->describe();
      std::string path = temp_dir() + "/rt.npy";
      ASSERT_TRUE(write_npy(path, x).ok());
      auto z = read_npy(path);
      ASSERT_TRUE(z.ok()) << z.status().to_string();
      EXPECT_TRUE(x.same_as(*z));
    }
}

TEST(Npy, HeaderTextMatchesNumpy) {
  auto b = encode_npy(Tensor::from_vector<float>({1, 2, 3}));
  ASSERT_TRUE(b.ok());
  EXPECT_NE(b->find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"), std::string::npos);
  auto s = encode_npy(Tensor::scalar<bool>(true));
  EXPECT_NE(s->find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(s->find("'shape': ()"), std::string::npos);
  auto h = encode_npy(Tensor(DType::kFloat16, {2, 3}));
  EXPECT_NE(h->find("'descr': '<f2'"), std::string::npos);
  EXPECT_NE(h->find("'shape': (2, 3)"), std::string::npos);
}

TEST(Npy, BFloat16IsWrittenAsFloat32) {
  Tensor x = Tensor::from_vector<bfloat16>({bfloat16(1.5f), bfloat16(-2.0f), bfloat16(3.140625f)});
  EXPECT_EQ(npy_storage_dtype(DType::kBFloat16), DType::kFloat32);
  auto b = encode_npy(x);
  ASSERT_TRUE(b.ok());
  auto y = decode_npy(b->data(), b->size(), "mem");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dtype(), DType::kFloat32);
  EXPECT_EQ(y->data<float>()[2], 3.140625f);
}

TEST(Npy, BigEndian) {
  std::string data = std::string("\x3f\x80\x00\x00\xc0\x00\x00\x00", 8);  // 1.0f, -2.0f big-endian
  auto t = decode_npy(npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data).data(),
                      npy_with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data).size(), "be");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->data<float>()[0], 1.0f);
  EXPECT_EQ(t->data<float>()[1], -2.0f);
  std::string i64 = npy_with_header("{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }",
                                    std::string("\x00\x00\x00\x00\x00\x00\x01\x02", 8));
  auto u = decode_npy(i64.data(), i64.size(), "be");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->data<int64_t>()[0], 258);
  std::string f16 = npy_with_header("{'descr': '>f2', 'fortran_order': False, 'shape': (), }", std::string("\x3c\x00", 2));
  auto h = decode_npy(f16.data(), f16.size(), "be");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(static_cast<float>(h->data<float16>()[0]), 1.0f);
}

TEST(Npy, FortranOrderIsTransposedToC) {
  // C array [[0,1,2],[3,4,5]] stored column-major is 0,3,1,4,2,5.
  std::vector<int32_t> f = {0, 3, 1, 4, 2, 5};
  std::string img = npy_with_header("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }",
                                    std::string(reinterpret_cast<char*>(f.data()), 24));
  auto t = decode_npy(img.data(), img.size(), "f");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t->data<int32_t>()[i], i);
  // Rank 3, shape (2,2,3): Fortran offset of (i,j,k) is i + 2j + 4k.
  std::vector<int16_t> f3(12);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) f3[i + 2 * j + 4 * k] = static_cast<int16_t>(i * 6 + j * 3 + k);
  std::string img3 = npy_with_header("{'shape': (2, 2, 3), 'fortran_order': True, 'descr': '<i2'}",
                                     std::string(reinterpret_cast<char*>(f3.data()), 24));
  auto t3 = decode_npy(img3.data(), img3.size(), "f3");
  ASSERT_TRUE(t3.ok()) << t3.status().to_string();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(t3->data<int16_t>()[i], i);
}

TEST(Npy, Versions2And3AndOldSpellings) {
  std::string data(8, '\0');
  for (int major : {2, 3}) {
    std::string img = npy_with_header("{\"descr\": \"<u4\", \"fortran_order\": False, \"shape\": (2L,)}", data, major);
    auto t = decode_npy(img.data(), img.size(), "v");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dtype(), DType::kUInt32);
    EXPECT_EQ(t->dims(), (std::vector<int64_t>{2}));
  }
  std::string q = npy_with_header("{'descr': '?', 'fortran_order': False, 'shape': (2,), }", std::string("\x00\x05", 2));
  auto b = decode_npy(q.data(), q.size(), "bool");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data<uint8_t>()[1], 1) << "non-zero bool bytes are normalised to 1";
}

TEST(Npy, ReadsNumpyArchives) {
  for (bool compressed : {false, true}) {
    std::string path = temp_dir() + (compressed ? "/np_c.npz" : "/np_s.npz");
    write_bytes(path, compressed ? std::string(reinterpret_cast<const char*>(kNumpySavezCompressed), kNumpySavezCompressedSize)
                                 : std::string(reinterpret_cast<const char*>(kNumpySavez), kNumpySavezSize));
    auto arrays = read_npz(path);
    ASSERT_TRUE(arrays.ok()) << arrays.status().to_string();
    ASSERT_EQ(arrays->size(), 3u);
    EXPECT_EQ((*arrays)[0].first, "a");
    EXPECT_EQ((*arrays)[0].second.describe(), "float32[2,3]");
    EXPECT_EQ((*arrays)[0].second.data<float>()[5], 5.0f);
    EXPECT_EQ((*arrays)[1].first, "flags");
    EXPECT_EQ((*arrays)[1].second.dtype(), DType::kBool);
    EXPECT_EQ((*arrays)[2].first, "big");
    EXPECT_EQ((*arrays)[2].second.to_int64_vector(), (std::vector<int64_t>{1, 2, 3, 4}));
  }
}

TEST(Npy, NpzRoundTrip) {
  std::vector<std::pair<std::string, Tensor>> in = {{"x", sample(DType::kFloat32, {3, 4})},
                                                    {"mask", sample(DType::kBool, {7})},
                                                    {"empty", sample(DType::kInt64, {0, 2})}};
  for (bool compress : {false, true}) {
    std::string path = temp_dir() + "/rt.npz";
    ASSERT_TRUE(write_npz(path, in, compress).ok());
    auto out = read_npz(path);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ(out->size(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ((*out)[i].first, in[i].first);
      EXPECT_TRUE((*out)[i].second.same_as(in[i].second));
    }
  }
}

void expect_error(const std::string& img, const std::string& needle) {
  auto t = decode_npy(img.data(), img.size(), "bad.npy");
  ASSERT_FALSE(t.ok()) << "accepted: " << needle;
  EXPECT_NE(t.status().to_string().find("bad.npy"), std::string::npos) << t.status().to_string();
  EXPECT_NE(t.status().to_string().find(needle), std::string::npos) << t.status().to_string();
}

TEST(Npy, HostileHeaders) {
  const std::string d8(8, '\0');
  expect_error("", "not a .npy file");
  expect_error("PK\x03\x04 hello", "not a .npy file");
  expect_error(std::string("\x93NUMPY\x09\x00\x10\x00", 10), "version 9.0");
  expect_error(std::string("\x93NUMPY\x01\x00\xff\xff", 10) + "{", "truncated .npy header");
  expect_error(std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12), "allowed");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", d8), "truncated?");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", d8), "8 bytes of data");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 1048576), }", d8),
               "more than");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", d8),
               "too large");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", d8), "negative");
  expect_error(npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", d8), "complex");
  expect_error(npy_with_header("{'descr': '<U2', 'fortran_order': False, 'shape': (1,), }", d8), "strings");
  expect_error(npy_with_header("{'descr': '<V2', 'fortran_order': False, 'shape': (4,), }", d8), "bfloat16");
  expect_error(npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", d8), "structured");
  expect_error(npy_with_header("{'descr': '<f4', 'shape': (2,), }", d8), "'fortran_order'");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", d8), "malformed");
  expect_error(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} trailing", d8), "malformed");
  expect_error(npy_with_header("{'descr: '<f4'", d8), "malformed");
  expect_error(npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", d8), "twice");
  std::string many = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 70; ++i) many += "1,";
  expect_error(npy_with_header(many + "), }", d8), "dimensions");
}

TEST(Npy, EveryTruncationAndByteFlipIsHandled) {
  auto img = encode_npy(sample(DType::kFloat64, {3, 2}));
  ASSERT_TRUE(img.ok());
  for (size_t n = 0; n < img->size(); ++n) {
    std::string cut = img->substr(0, n);  // its own allocation: an over-read trips ASan
    EXPECT_FALSE(decode_npy(cut.data(), cut.size(), "cut.npy").ok()) << "accepted a truncation to " << n << " bytes";
  }
  std::string path = temp_dir() + "/trunc.npy";
  write_bytes(path, img->substr(0, img->size() - 5));
  auto r = read_npy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find(path), std::string::npos);
  for (size_t i = 0; i < 80; ++i)
    for (unsigned char x : {0x01, 0x80, 0xff}) {
      std::string bad = *img;
      bad[i] = static_cast<char>(bad[i] ^ x);
      (void)decode_npy(bad.data(), bad.size(), "flip.npy");  // ok or error, never a crash
    }
}

TEST(Npy, HostileArchives) {
  std::string good(reinterpret_cast<const char*>(kNumpySavezCompressed), kNumpySavezCompressedSize);
  std::string path = temp_dir() + "/bad.npz";
  for (size_t n = 0; n < good.size(); n += 7) {
    write_bytes(path, good.substr(0, n));
    auto r = read_npz(path);
    EXPECT_FALSE(r.ok()) << "accepted a truncation to " << n << " bytes";
    if (!r.ok()) {
      EXPECT_NE(r.status().to_string().find(path), std::string::npos) << r.status().to_string();
    }
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    write_bytes(path, bad);
    (void)read_npz(path);  // ok or error, never a crash
  }
  write_bytes(path, "random bytes, not a zip at all, long enough to look for a directory");
  auto r = read_npz(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().to_string().find("not an .npz file"), std::string::npos);
  // A corrupted deflate payload (first member's data) is caught by inflate or the CRC.
  std::string crc_bad = good;
  crc_bad[120] = static_cast<char>(crc_bad[120] ^ 0x01);
  write_bytes(path, crc_bad);
  EXPECT_FALSE(read_npz(path).ok());
  EXPECT_FALSE(read_npz(temp_dir() + "/does-not-exist.npz").ok());
  EXPECT_FALSE(read_npy(temp_dir()).ok()) << "a directory is not a file";
}

}  // namespace
}  // namespace ferry
