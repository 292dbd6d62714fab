// twemproxy's key hashes against values published by others, never values this code produced:
//   - libmemcached's tests/hash_results.h (Brian Aker, 2006-2009): 25 words hashed with each
//     of libhashkit's functions, which twemproxy's src/hashkit/ took over (one_at_a_time, md5,
//     crc, fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh, murmur, jenkins);
//   - the CRC catalogue's check values for "123456789" (CRC-32: 0xCBF43926; CRC-16/XMODEM:
//     0x31C3), RFC 1321's MD5 test suite, Landon Curt Noll's FNV test vectors;
//   - SMHasher's verification values (Austin Appleby, main.cpp) for MurmurHash2 (0x27864C1E)
//     and lookup3 (0x3D83917A), the general algorithms behind murmur and jenkins.
// What no one published (the sign extension of bytes >= 0x80, crc16's unmasked high bits, the
// empty key) is pinned against a live nutcracker 0.5.0 in
// tests/integration/cache/twemproxy_compat_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plugins/selectors/twemproxy_hash.h"

namespace lb {
namespace {

// libmemcached tests/hash_results.h: list_to_hash[].
const std::vector<std::string> kWords = {
    "apple",  "beat",   "carrot", "daikon", "eggplant",  "flower",    "green",
    "hide",   "ick",    "jack",   "kick",   "lime",      "mushrooms", "nectarine",
    "orange", "peach",  "quant",  "ripen",  "strawberry", "tang",     "up",
    "volumne", "when",  "yellow", "zip"};

struct Published {
  const char* name;
  uint32_t (*fn)(std::string_view) noexcept;
  std::vector<uint32_t> values;   // one per word of kWords
};

// libmemcached tests/hash_results.h: one_at_a_time_values[], md5_values[], crc_values[],
// fnv1_64_values[], fnv1a_64_values[], fnv1_32_values[], fnv1a_32_values[], hsieh_values[]
// (HAVE_HSIEH_HASH), murmur_values[], jenkins_values[].
const std::vector<Published> kLibmemcached = {
    {"one_at_a_time", twemproxy::oneAtATime,
     {2297466611U, 3902465932U, 469785835U,  1937308741U, 261917617U,  3785641677U, 1439605128U,
      1649152283U, 1493851484U, 1246520657U, 2221159044U, 1973511823U, 384136800U,  214358653U,
      2379473940U, 4269788650U, 2864377005U, 2638630052U, 427683330U,  990491717U,  1747111141U,
      792127364U,  2599214128U, 2553037199U, 2509838425U}},
    {"md5", twemproxy::md5,
     {3195025439U, 2556848621U, 3724893440U, 3332385401U, 245758794U,  2550894432U, 121710495U,
      3053817768U, 1250994555U, 1862072655U, 2631955953U, 2951528551U, 1451250070U, 2820856945U,
      2060845566U, 3646985608U, 2138080750U, 217675895U,  2230934345U, 1234361223U, 3968582726U,
      2455685270U, 1293568479U, 199067604U,  2042482093U}},
    {"crc32", twemproxy::crc32,
     {10542U, 22009U, 14526U, 19510U, 19432U, 10199U, 20634U, 9369U,  11511U,
      10362U, 7893U,  31289U, 11313U, 9354U,  7621U,  30628U, 15218U, 25967U,
      2695U,  9380U,  17300U, 28156U, 9192U,  20484U, 16925U}},
    {"fnv1_64", twemproxy::fnv1_64,
     {473199127U,  4148981457U, 3971873300U, 3257986707U, 1722477987U, 2991193800U, 4147007314U,
      3633179701U, 1805162104U, 3503289120U, 3395702895U, 3325073042U, 2345265314U, 3340346032U,
      2722964135U, 1173398992U, 2815549194U, 2562818319U, 224996066U,  2680194749U, 3035305390U,
      246890365U,  2395624193U, 4145193337U, 1801941682U}},
    {"fnv1a_64", twemproxy::fnv1a_64,
     {1488911807U, 2500855813U, 1510099634U, 1390325195U, 3647689787U, 3241528582U, 1669328060U,
      2604311949U, 734810122U,  1516407546U, 560948863U,  1767346780U, 561034892U,  4156330026U,
      3716417003U, 3475297030U, 1518272172U, 227211583U,  3938128828U, 126112909U,  3043416448U,
      3131561933U, 1328739897U, 2455664041U, 2272238452U}},
    {"fnv1_32", twemproxy::fnv1_32,
     {67176023U,   1190179409U, 2043204404U, 3221866419U, 2567703427U, 3787535528U, 4147287986U,
      3500475733U, 344481048U,  3865235296U, 2181839183U, 119581266U,  510234242U,  4248244304U,
      1362796839U, 103389328U,  1449620010U, 182962511U,  3554262370U, 3206747549U, 1551306158U,
      4127558461U, 1889140833U, 2774173721U, 1180552018U}},
    {"fnv1a_32", twemproxy::fnv1a_32,
     {280767167U,  2421315013U, 3072375666U, 855001899U,  459261019U,  3521085446U, 18738364U,
      1625305005U, 2162232970U, 777243802U,  3323728671U, 132336572U,  3654473228U, 260679466U,
      1169454059U, 2698319462U, 1062177260U, 235516991U,  2218399068U, 405302637U,  1128467232U,
      3579622413U, 2138539289U, 96429129U,   2877453236U}},
    {"hsieh", twemproxy::hsieh,
     {3738850110U, 3636226060U, 3821074029U, 3489929160U, 3485772682U, 80540287U,  1805464076U,
      1895033657U, 409795758U,  979934958U,  3634096985U, 1284445480U, 2265380744U, 707972988U,
      353823508U,  1549198350U, 1327930172U, 9304163U,    4220749037U, 2493964934U, 2777873870U,
      2057831732U, 1510213931U, 2027828987U, 3395453351U}},
    {"murmur", twemproxy::murmur,
     {4142305122U, 734504955U,  3802834688U, 4076891445U, 387802650U,  560515427U,  3274673488U,
      3150339524U, 1527441970U, 2728642900U, 3613992239U, 2938419259U, 2321988328U, 1145154116U,
      4038540960U, 2224541613U, 264013145U,  3995512858U, 2400956718U, 2346666219U, 926327338U,
      442757446U,  1770805201U, 560483147U,  3902279934U}},
    {"jenkins", twemproxy::jenkins,
     {1442444624U, 4253821186U, 1885058256U, 2120131735U, 3261968576U, 3515188778U, 4232909173U,
      4288625128U, 1812047395U, 3689182164U, 2502979932U, 1214050606U, 2415988847U, 1494268927U,
      1025545760U, 3920481083U, 4153263658U, 3824871822U, 3072759809U, 798622255U,  3065432577U,
      1453328165U, 2691550971U, 3408888387U, 2629893356U}},
};

TEST(TwemproxyHashTest, MatchesLibmemcachedPublishedValues) {
  for (const Published& p : kLibmemcached) {
    ASSERT_EQ(p.values.size(), kWords.size()) << p.name;
    for (size_t i = 0; i < kWords.size(); ++i)
      EXPECT_EQ(p.fn(kWords[i]), p.values[i]) << p.name << "(\"" << kWords[i] << "\")";
  }
}

// The CRC catalogue's check input.
TEST(TwemproxyHashTest, CrcsMatchTheCatalogueCheckValues) {
  EXPECT_EQ(twemproxy::crc32a("123456789"), 0xCBF43926u);              // CRC-32 (ISO-HDLC)
  EXPECT_EQ(twemproxy::crc32("123456789"), (0xCBF43926u >> 16) & 0x7fff);   // libmemcached's cut
  EXPECT_EQ(twemproxy::crc16("123456789") & 0xffff, 0x31C3u);          // CRC-16/XMODEM
  EXPECT_EQ(twemproxy::crc32a(""), 0u);
  EXPECT_EQ(twemproxy::crc16(""), 0u);
}

// crc16 keeps what the shifts carry past bit 15: one byte gives a table entry (16 bits), each
// further byte shifts the register up by 8, so longer keys have high bits set while the low
// 16 bits stay the CRC (checked above).
TEST(TwemproxyHashTest, Crc16KeepsTheBitsShiftedPastSixteen) {
  EXPECT_LT(twemproxy::crc16("a"), 0x10000u);
  EXPECT_GE(twemproxy::crc16("123456789"), 0x10000u);
}

// RFC 1321, appendix A.5.
TEST(TwemproxyHashTest, Md5DigestMatchesRfc1321) {
  auto hex = [](std::string_view s) {
    std::string out;
    char buf[3];
    for (uint8_t b : twemproxy::md5Digest(s)) {
      snprintf(buf, sizeof buf, "%02x", b);
      out += buf;
    }
    return out;
  };
  EXPECT_EQ(hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(hex("a"), "0cc175b9c0f1b6a831c399e269772661");
  EXPECT_EQ(hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(hex("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
  // twemproxy's md5 key hash: digest bytes 0..3 as a little-endian word.
  EXPECT_EQ(twemproxy::md5("abc"), 0x98500190u);
}

// Landon Curt Noll's FNV test vectors (the FNV reference page's test suite).
TEST(TwemproxyHashTest, TrueFnvVariantsMatchNollsVectors) {
  EXPECT_EQ(twemproxy::fnv1_32(""), 0x811c9dc5u);
  EXPECT_EQ(twemproxy::fnv1_32("a"), 0x050c5d7eu);
  EXPECT_EQ(twemproxy::fnv1_32("foobar"), 0x31f0b262u);
  EXPECT_EQ(twemproxy::fnv1a_32("a"), 0xe40c292cu);
  EXPECT_EQ(twemproxy::fnv1a_32("foobar"), 0xbf9cf968u);
  // FNV-1 64 truncated to its low 32 bits: 0xaf63bd4c8601b7be, 0x340d8765a4dda9c2.
  EXPECT_EQ(twemproxy::fnv1_64("a"), 0x8601b7beu);
  EXPECT_EQ(twemproxy::fnv1_64("foobar"), 0xa4dda9c2u);
}

// twemproxy's fnv1a_64 runs in 32 bits with FNV-64's basis and prime cut to 32 bits; since
// xor and multiplication modulo 2^32 see only low bits, that is FNV-1a 64 truncated (Noll:
// "a" -> 0xaf63dc4c8601ec8c, "foobar" -> 0x85944171f73967e8).
TEST(TwemproxyHashTest, Fnv1a64IsFnv1a64Truncated) {
  EXPECT_EQ(twemproxy::fnv1a_64(""), 0x84222325u);
  EXPECT_EQ(twemproxy::fnv1a_64("a"), 0x8601ec8cu);
  EXPECT_EQ(twemproxy::fnv1a_64("foobar"), 0xf73967e8u);
}

// SMHasher's VerificationTest: hash the keys {}, {0}, {0,1}, ..., {0..254} with seed 256 - i,
// write each 32-bit result little-endian into one 1024-byte buffer, hash that with seed 0.
template <typename Hash>
uint32_t smhasherVerification(Hash hash) {
  std::string key, results;
  for (int i = 0; i < 256; ++i) {
    const uint32_t h = hash(key, static_cast<uint32_t>(256 - i));
    for (int b = 0; b < 4; ++b) results.push_back(static_cast<char>(h >> (8 * b)));
    key.push_back(static_cast<char>(i));
  }
  return hash(results, 0);
}

TEST(TwemproxyHashTest, GeneralAlgorithmsPassSmhasherVerification) {
  EXPECT_EQ(smhasherVerification(twemproxy::murmurHash2), 0x27864C1Eu);
  EXPECT_EQ(smhasherVerification(twemproxy::lookup3HashLittle), 0x3D83917Au);
  // twemproxy's choices of seed on top of them.
  EXPECT_EQ(twemproxy::murmur("apple"), twemproxy::murmurHash2("apple", 0xdeadbeefU * 5));
  EXPECT_EQ(twemproxy::jenkins("apple"), twemproxy::lookup3HashLittle("apple", 13));
}

// Sign extension, from the source (char is signed on x86-64): a byte 0xff enters the FNV
// family as 0xffffffff (fnv1_64: 0xffffffffffffffff), one_at_a_time likewise.
TEST(TwemproxyHashTest, BytesAboveSevenBitsEnterSignExtended) {
  EXPECT_EQ(twemproxy::fnv1a_32("\xff"), (0x811c9dc5u ^ 0xffffffffu) * 16777619u);
  EXPECT_EQ(twemproxy::fnv1_32("\xff"), (0x811c9dc5u * 16777619u) ^ 0xffffffffu);
  EXPECT_EQ(twemproxy::fnv1a_64("\x80"), (0x84222325u ^ 0xffffff80u) * 0x1b3u);
  EXPECT_EQ(twemproxy::fnv1_64("\xff"),
            static_cast<uint32_t>((0xcbf29ce484222325ULL * 0x100000001b3ULL) ^ ~0ULL));
  uint32_t v = 0xffffffffu;   // one_at_a_time of one byte 0xff
  v += v << 10;
  v ^= v >> 6;
  v += v << 3;
  v ^= v >> 11;
  v += v << 15;
  EXPECT_EQ(twemproxy::oneAtATime("\xff"), v);
}

TEST(TwemproxyHashTest, KeyHashesAreNamedAsNutcrackerYmlSpellsThem) {
  std::vector<std::string> names;
  for (const KeyHash& h : twemproxy::kKeyHashes) names.emplace_back(h.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fnv1a_64", "fnv1_64", "fnv1a_32", "fnv1_32", "md5",
                                             "murmur", "crc32a", "crc32", "crc16",
                                             "one_at_a_time", "jenkins", "hsieh"}));
  ASSERT_NE(twemproxy::findKeyHash("murmur"), nullptr);
  EXPECT_EQ(hashKeyBytes(*twemproxy::findKeyHash("murmur"), "apple"), 4142305122U);
  EXPECT_EQ(twemproxy::findKeyHash("fnv1a"), nullptr);
  EXPECT_EQ(twemproxy::findKeyHash("crc32")->bits, 15);
  EXPECT_EQ(twemproxy::findKeyHash("fnv1a_64")->bits, 32);
}

// nutcracker's server_pool_hash gives an empty key hash 0 whatever the function.
TEST(TwemproxyHashTest, EmptyKeyHashesToZeroAsInNutcracker) {
  for (const KeyHash& h : twemproxy::kKeyHashes) EXPECT_EQ(hashKeyBytes(h, ""), 0u) << h.name;
  EXPECT_NE(twemproxy::fnv1a_64(""), 0u);   // the raw function would not
}

}  // namespace
}  // namespace lb
