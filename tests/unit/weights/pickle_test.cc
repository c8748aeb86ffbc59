// The restricted unpickler (weights/pickle.h): the data opcodes torch.save writes build the values they
// should; every global outside the allow-list, every object-building opcode and every malformed
// stream is an error naming the pickle, never a crash, a hang or a call.
#include <gtest/gtest.h>

#include <string>

#include "weights/pickle.h"

namespace ferry::weights {
namespace {

Result<PickleDocument> parse(const std::string& bytes) { return parse_pickle(bytes, "t.pkl", nullptr); }

std::string err(const std::string& bytes) {
  auto r = parse(bytes);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().to_string();
}

// Protocol 2 header, then the body, then STOP.
std::string p2(const std::string& body) { return std::string("\x80\x02", 2) + body + "."; }

TEST(Pickle, BuildsDictsListsAndScalars) {
  // {'a': 1, 'b': [True, 2.5, 'x']} as protocol 2 would write it (memo puts included)
  std::string body = std::string("}q\x00(X\x01\x00\x00\x00", 9) + "aK\x01" + std::string("X\x01\x00\x00\x00", 5) +
                     "b]q\x01(\x88G" + std::string("\x40\x04\x00\x00\x00\x00\x00\x00", 8) +
                     std::string("X\x01\x00\x00\x00", 5) + "xeu";
  auto r = parse(p2(body));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const PyValue& root = r->at(r->root);
  ASSERT_EQ(root.kind, PyKind::kDict);
  ASSERT_EQ(root.items.size(), 4u);
  EXPECT_EQ(r->at(root.items[0]).text, "a");
  EXPECT_EQ(r->at(root.items[1]).number, 1);
  const PyValue& list = r->at(root.items[3]);
  ASSERT_EQ(list.kind, PyKind::kList);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(r->at(list.items[0]).kind, PyKind::kBool);
  EXPECT_DOUBLE_EQ(r->at(list.items[1]).real, 2.5);
  EXPECT_EQ(describe_value(*r, list.items[2]), "'x'");
}

TEST(Pickle, OrderedDictAndNegativeLongs) {
  // collections.OrderedDict() then SETITEM 'k' -> LONG1(-2)
  std::string body = std::string("ccollections\nOrderedDict\nq\x00)R", 29) + std::string("X\x01\x00\x00\x00", 5) + "k\x8a\x01\xfe" + "s";
  auto r = parse(p2(body));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const PyValue& root = r->at(r->root);
  ASSERT_EQ(root.kind, PyKind::kDict);
  EXPECT_EQ(r->at(root.items[1]).number, -2);
}

TEST(Pickle, RefusesGlobalsOutsideTheAllowList) {
  for (const char* g : {"cos\nsystem\n", "cposix\nsystem\n", "cbuiltins\neval\n", "c__builtin__\nexec\n",
                        "csubprocess\nPopen\n", "ctorch\nload\n", "cnumpy.core.multiarray\n_reconstruct\n"}) {
    std::string e = err(p2(std::string(g) + "N\x85R"));
    EXPECT_NE(e.find("refused"), std::string::npos) << g << ": " << e;
    EXPECT_NE(e.find("t.pkl"), std::string::npos) << e;
  }
  // STACK_GLOBAL spelling of the same
  std::string e = err(p2(std::string("X\x02\x00\x00\x00os", 7) + std::string("X\x06\x00\x00\x00system", 11) + "\x93"));
  EXPECT_NE(e.find("'os.system'"), std::string::npos) << e;
}

TEST(Pickle, RefusesObjectBuildingOpcodes) {
  for (const std::string& s : {std::string("(K\x01o"), std::string("(ios\nsystem\n")}) {
    std::string e = err(p2(s));
    EXPECT_NE(e.find("refused"), std::string::npos) << e;
  }
  // An allowed but non-callable global (a storage type) is not called either.
  EXPECT_NE(err(p2("ctorch\nFloatStorage\n)R")).find("does not run"), std::string::npos);
}

TEST(Pickle, MalformedStreamsAreErrors) {
  EXPECT_NE(err("").find("STOP"), std::string::npos);
  EXPECT_NE(err("\x80\x02}").find("STOP"), std::string::npos);                                   // truncated
  EXPECT_NE(err(p2("X\xff\xff\xff\x7f")).find("truncated"), std::string::npos);                  // length lies
  EXPECT_NE(err(p2("h\x05")).find("never put"), std::string::npos) << err(p2("h\x05"));      // memo miss
  EXPECT_FALSE(parse(p2("0")).ok());                                                             // pop empty
  EXPECT_FALSE(parse(p2("}}")).ok());                                                            // two values left
  EXPECT_FALSE(parse(p2("K\x01K\x02s")).ok());                                                   // setitem on int
  EXPECT_FALSE(parse(p2("Q")).ok());                                                             // persid, no loader
  EXPECT_NE(err(p2("I1\n")).find("not supported"), std::string::npos);                           // protocol 0
}

TEST(Pickle, DeepNestingAndSelfReferenceDoNotCrash) {
  // 200000 nested lists: the arena frees them without recursion.
  std::string deep;
  for (int i = 0; i < 200000; ++i) deep += "]";
  for (int i = 0; i < 199999; ++i) deep += "a";
  auto r = parse(p2(deep));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // A list appended to itself through the memo.
  auto self = parse(p2(std::string("]q\x00h\x00" "a", 6)));
  ASSERT_TRUE(self.ok()) << self.status().to_string();
  EXPECT_EQ(self->at(self->root).items[0], self->root);
}

}  // namespace
}  // namespace ferry::weights
