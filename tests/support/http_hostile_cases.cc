#include "tests/support/http_hostile_cases.h"

namespace lb::test {

using namespace std::string_literals;

namespace {

// What lb adds to every request it forwards from 127.0.0.1.
const std::string kForwarded = "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n";

// A forwarded HTTP/1.1 request: its request line and the headers lb keeps (each line ending
// in CRLF, as lb writes them), lb's own, the empty line, the body.
std::string up(const std::string& head, const std::string& body = "") {
  return head + kForwarded + "\r\n" + body;
}
// HTTP/1.0: lb asks for keep-alive upstream.
std::string up10(const std::string& head, const std::string& body = "") {
  return head + kForwarded + "Connection: keep-alive\r\n\r\n" + body;
}

const std::string kGet = "GET / HTTP/1.1\r\nHost: a\r\n";
const std::string kPostChunked = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n";
const std::string kSmuggled = "GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n";

// A GET with one extra header line (given without its CRLF).
std::string getWith(const std::string& line) { return kGet + line + "\r\n\r\n"; }

const char* kMalformed = "malformed";
const char* kTooLarge = "header_too_large";

HostileCase refused(const char* name, std::string request, int status = 400,
                    const char* reason = kMalformed) {
  return {name, std::move(request), {status}, "", reason};
}

// Refused mid-body: the head has gone up, nothing after it, and the upstream connection is
// closed so the origin never sees the message end.
HostileCase refusedBody(const char* name, const std::string& head, const std::string& body,
                        std::string forwarded_head, int status = 400,
                        const char* reason = kMalformed) {
  return {name, head + "\r\n" + body, {status}, std::move(forwarded_head), reason,
          Send::kWhole, true};
}

HostileCase forwarded(const char* name, std::string request, std::string origin) {
  return {name, std::move(request), {200}, std::move(origin)};
}

}  // namespace

std::vector<HostileCase> hostileCases() {
  std::vector<HostileCase> c;
  // ---- Content-Length and Transfer-Encoding together or twice ------------------------------
  c.push_back(refused("ClThenTe", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + kSmuggled));
  c.push_back(refused("TeThenCl", kPostChunked + "Content-Length: 6\r\n\r\n0\r\n\r\n" + kSmuggled));
  c.push_back(refused("TwoDifferentContentLengths",
                      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"
                      "hello!"));
  c.push_back(refused("TwoEqualContentLengths",
                      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"
                      "hello"));
  c.push_back(refused("ContentLengthList",
                      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello"));
  c.push_back(refused("ContentLengthPlus", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello"));
  c.push_back(refused("ContentLengthNegative",
                      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"));
  c.push_back(refused("ContentLengthHex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\nhello"));
  c.push_back(refused("ContentLengthSpaceInside",
                      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n"));
  c.push_back(refused("ContentLengthEmpty", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n"));
  c.push_back(refused("ContentLengthHuge",
                      "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
                      413, "body_too_large"));
  c.push_back(forwarded("ContentLengthLeadingZeros",
                        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 005\r\n\r\nhello",
                        up("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 005\r\n", "hello")));
  // ---- Transfer-Encoding ------------------------------------------------------------------
  c.push_back(refused("TransferEncodingInHttp10",
                      "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("UnknownCodingXchunked",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n" +
                          kSmuggled));
  c.push_back(refused("ChunkedNotFinal",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"));
  c.push_back(refused("ChunkedTwiceInOneHeader",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("ChunkedTwiceInTwoHeaders",
                      kPostChunked + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("TransferEncodingEmpty",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n" + kSmuggled));
  c.push_back(refused("TransferEncodingWithParameter",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("TransferEncodingQuoted",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("TransferEncodingIdentity",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"));
  c.push_back(refused("TransferEncodingSpaceBeforeColon",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("TransferEncodingFolded",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("TransferEncodingVerticalTab",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\x0b" "chunked\r\n\r\n0\r\n\r\n"));
  c.push_back(refused("TransferEncodingNul",
                      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\0\r\n\r\n0\r\n\r\n"s));
  c.push_back(forwarded("TransferEncodingAfterTab",
                        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n",
                        up(kPostChunked, "0\r\n\r\n")));
  c.push_back(forwarded("TransferEncodingUpperCase",
                        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n",
                        up("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n",
                           "0\r\n\r\n")));
  c.push_back(forwarded("GzipThenChunked",
                        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                        "2\r\nhi\r\n0\r\n\r\n",
                        up("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n",
                           "2\r\nhi\r\n0\r\n\r\n")));
  c.push_back(forwarded("ChunkedGet",
                        "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                        up("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n",
                           "0\r\n\r\n")));
  // ---- chunk framing ----------------------------------------------------------------------
  c.push_back(refusedBody("ChunkDataWithoutCrlf", kPostChunked,
                          "2\r\nhiAB3a\r\n0\r\n\r\n" + kSmuggled, up(kPostChunked)));
  c.push_back(refusedBody("ChunkSizeEndsInBareLf", kPostChunked, "2\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkSizeTrailingSpace", kPostChunked, "2 \r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkSizeHexPrefix", kPostChunked, "0x2\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkSizeNegative", kPostChunked, "-2\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkSizeEmpty", kPostChunked, "\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkSizeOverflow", kPostChunked, "FFFFFFFFFFFFFFFFF\r\nhi\r\n",
                          up(kPostChunked), 413, "body_too_large"));
  c.push_back(refusedBody("ChunkDataLongerThanSize", kPostChunked, "2\r\nhiX\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkExtensionsUnbounded", kPostChunked,
                          "2;" + std::string(5000, 'e') + "\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkExtensionEmptyName", kPostChunked, "2;=v\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkExtensionEmptyValue", kPostChunked, "2;n=\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("ChunkExtensionBareCr", kPostChunked, "2;a=b\rX\r\nhi\r\n0\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("TrailerFolded", kPostChunked, "0\r\nX-T: a\r\n b\r\n\r\n",
                          up(kPostChunked)));
  // llhttp takes a bare LF as the end of the trailer section; lb passes it on as it came.
  c.push_back(refusedBody("LastChunkThenBareLf", kPostChunked, "0\r\n\n" + kSmuggled,
                          up(kPostChunked)));
  c.push_back(refusedBody("TrailerThenBareLf", kPostChunked, "0\r\nX-T: a\r\n\n" + kSmuggled,
                          up(kPostChunked)));
  c.push_back(refusedBody("TrailerBareCr", kPostChunked, "0\r\nX-T: a\rb\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(refusedBody("TrailerSpaceBeforeColon", kPostChunked, "0\r\nX-T : a\r\n\r\n",
                          up(kPostChunked)));
  c.push_back(forwarded("ChunkExtensionShort", kPostChunked + "\r\n2;a=b\r\nhi\r\n0\r\n\r\n",
                        up(kPostChunked, "2;a=b\r\nhi\r\n0\r\n\r\n")));
  c.push_back(forwarded("ChunkSizeLeadingZeros", kPostChunked + "\r\n0002\r\nhi\r\n0\r\n\r\n",
                        up(kPostChunked, "0002\r\nhi\r\n0\r\n\r\n")));
  c.push_back(forwarded("Trailers", kPostChunked + "\r\n2\r\nhi\r\n0\r\nX-T: v\r\n\r\n",
                        up(kPostChunked, "2\r\nhi\r\n0\r\nX-T: v\r\n\r\n")));
  // ---- field lines --------------------------------------------------------------------------
  // The finding: forwarded as "X-A: a\r\n\r\n", the head ended early and the body, a
  // request, reached the backend's pooled connection as one.
  c.push_back(refused("ObsFold", "POST / HTTP/1.1\r\nHost: a\r\nX-A: a\r\n b\r\nContent-Length: " +
                                     std::to_string(kSmuggled.size()) + "\r\n\r\n" + kSmuggled));
  c.push_back(refused("ObsFoldTab", getWith("X-A: a\r\n\tb")));
  c.push_back(refused("ObsFoldAfterEmptyValue", getWith("X-A:\r\n b")));
  c.push_back(refused("ObsFoldOfWhitespaceOnly", getWith("X-A: a\r\n \t")));
  c.push_back(refused("ObsFoldOfHost", "GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n"));
  c.push_back(refused("SpaceBeforeColon", "GET / HTTP/1.1\r\nHost : evil\r\n\r\n"));
  c.push_back(refused("SpaceBeforeColonBesideHost", getWith("Host : evil")));
  c.push_back(refused("TabBeforeColon", getWith("X-A\t: b")));
  c.push_back(refused("SpaceInName", getWith("X A: b")));
  c.push_back(refused("EmptyName", getWith(": b")));
  c.push_back(refused("ColonOnly", getWith(":")));
  c.push_back(refused("SlashInName", getWith("X/A: b")));
  c.push_back(refused("HighByteInName", getWith("X\xff" "A: b")));
  c.push_back(refused("NoColon", getWith("X-A b")));
  c.push_back(refused("FirstLineStartsWithSpace", "GET / HTTP/1.1\r\n Host: a\r\n\r\n"));
  c.push_back(refused("BareCrInValue", getWith("X-A: a\rb")));
  c.push_back(refused("BareCrEndsLine", getWith("X-A: a\r")));
  c.push_back(refused("BareLfEndsLine", "GET / HTTP/1.1\r\nX-A: a\nHost: a\r\n\r\n"));
  c.push_back(refused("BareCrInRequestLine", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("BareCrAfterHead", "GET / HTTP/1.1\r\nHost: a\r\n\r\r\n"));
  c.push_back(refused("NulInValue", getWith("X-A: a\0b"s)));
  c.push_back(refused("ControlInValue", getWith("X-A: a\x01" "b")));
  c.push_back(refused("DeleteInValue", getWith("X-A: a\x7f" "b")));
  c.push_back(forwarded("ObsTextInValue", getWith("X-A: caf\xe9"),
                        up(kGet + "X-A: caf\xe9\r\n")));
  c.push_back(forwarded("TabInValueAndTrailingSpace", getWith("X-A:\ta\tb  "),
                        up(kGet + "X-A: a\tb\r\n")));
  c.push_back(forwarded("ConnectionNamesContentLength",
                        "POST / HTTP/1.1\r\nHost: a\r\nConnection: content-length\r\n"
                        "Content-Length: 5\r\n\r\nhello",
                        up("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n", "hello")));
  c.push_back(forwarded("ConnectionNamesTransferEncoding",
                        "POST / HTTP/1.1\r\nHost: a\r\nConnection: transfer-encoding\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
                        up(kPostChunked, "2\r\nhi\r\n0\r\n\r\n")));
  c.push_back(forwarded("ConnectionNamesHost", "GET / HTTP/1.1\r\nConnection: host\r\nHost: a\r\n\r\n",
                        up(kGet)));
  c.push_back(forwarded("HopByHopHeadersStop",
                        getWith("Keep-Alive: 5\r\nTE: trailers\r\nConnection: x-foo, keep-alive\r\n"
                                "X-Foo: 1\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\n"
                                "Trailer: X-T\r\nX-Keep: yes"),
                        up(kGet + "X-Keep: yes\r\n")));
  c.push_back(forwarded("ForwardedForAppendedProtoReplaced",
                        getWith("X-Forwarded-For: 1.2.3.4\r\nX-Forwarded-Proto: https"),
                        kGet + "X-Forwarded-For: 1.2.3.4, 127.0.0.1\r\nX-Forwarded-Proto: http\r\n\r\n"));
  // ---- Host -----------------------------------------------------------------------------------
  c.push_back(refused("NoHostInHttp11", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n"));
  c.push_back(refused("TwoHosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"));
  c.push_back(refused("TwoHostsDifferentCase", "GET / HTTP/1.1\r\nHost: a\r\nhOST: a\r\n\r\n"));
  c.push_back(refused("TwoHostsInHttp10", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"));
  c.push_back(refused("HostWithSpace", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n"));
  c.push_back(refused("HostWithSlash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"));
  c.push_back(refused("HostWithUserinfo", "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n"));
  c.push_back(refused("HostWithBadPort", "GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n"));
  c.push_back(refused("HostWithBadPercent", "GET / HTTP/1.1\r\nHost: a%zz\r\n\r\n"));
  c.push_back(refused("HostUnclosedBracket", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n"));
  c.push_back(refused("HostWithComma", "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n"));
  c.push_back(forwarded("HostIpv6WithPort", "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
                        up("GET / HTTP/1.1\r\nHost: [::1]:80\r\n")));
  c.push_back(forwarded("HostEmpty", "GET / HTTP/1.1\r\nHost:\r\n\r\n",
                        up("GET / HTTP/1.1\r\nHost: \r\n")));
  c.push_back(forwarded("Http10WithoutHost", "GET / HTTP/1.0\r\n\r\n", up10("GET / HTTP/1.0\r\n")));
  // ---- request line, version, target ---------------------------------------------------------
  c.push_back(refused("Version20", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505));
  c.push_back(refused("Version09", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505));
  c.push_back(refused("Version12", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505));
  c.push_back(refused("Version31", "GET / HTTP/3.1\r\nHost: a\r\n\r\n", 505));
  c.push_back(refused("NoVersionHttp09", "GET /\r\nHost: a\r\n\r\n", 505));
  c.push_back(refused("Http2Preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505));
  c.push_back(refused("VersionLowerCase", "GET / http/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("VersionTwoDigitMinor", "GET / HTTP/1.10\r\nHost: a\r\n\r\n"));
  c.push_back(refused("SpaceAfterVersion", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n"));
  c.push_back(refused("LowerCaseMethod", "get / HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("UnknownMethod", "FOO / HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("TabInTarget", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("SpaceInTarget", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("HighByteInTarget", "GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("AsteriskWithGet", "GET * HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("AbsoluteFormOtherHost", "GET http://evil/x HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("AbsoluteFormUserinfo", "GET http://u@a/x HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("AbsoluteFormOtherScheme", "GET ftp://a/x HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("AuthorityFormWithGet", "GET a:80 HTTP/1.1\r\nHost: a:80\r\n\r\n"));
  c.push_back(refused("RelativeTarget", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.push_back(refused("Connect", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n"));
  c.push_back(forwarded("AsteriskWithOptions", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
                        up("OPTIONS * HTTP/1.1\r\nHost: a\r\n")));
  c.push_back(forwarded("AbsoluteFormAgreeingWithHost",
                        "GET http://A:80/x?y HTTP/1.1\r\nHost: a:80\r\n\r\n",
                        up("GET http://A:80/x?y HTTP/1.1\r\nHost: a:80\r\n")));
  c.push_back(forwarded("DoubleSpaceInRequestLineIsNormalised", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
                        up(kGet)));
  c.push_back(forwarded("EmptyLineBeforeRequest", "\r\n" + kGet + "\r\n", up(kGet)));
  // ---- sizes and time -------------------------------------------------------------------------
  c.push_back(refused("UriLongerThanTheHeadLimit",
                      "GET /" + std::string(5000, 'u') + " HTTP/1.1\r\nHost: a\r\n\r\n", 414,
                      kTooLarge));
  c.push_back(refused("HeadLongerThanTheLimit", getWith("X-Big: " + std::string(5000, 'b')), 431,
                      kTooLarge));
  std::string many = kGet;
  for (int i = 0; i < 129; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  c.push_back(refused("TooManyHeaders", many + "\r\n", 431, kTooLarge));
  c.push_back({"Slowloris", kGet, {408}, "", "header_timeout", Send::kTrickle});
  c.push_back({"OnlyEmptyLines", "\r\n\r\n", {408}, "", "header_timeout"});
  c.push_back({"BytewiseValid", getWith("X-A: a  b"), {200}, up(kGet + "X-A: a  b\r\n"), nullptr,
               Send::kBytewise});
  c.push_back({"BytewiseObsFold", getWith("X-A: a\r\n b"), {400}, "", kMalformed,
               Send::kBytewise});
  c.push_back({"BytewiseObsFoldOfWhitespaceOnly", getWith("X-A:\r\n "), {400}, "", kMalformed,
               Send::kBytewise});
  c.push_back({"BytewiseChunkedWithTrailers", kPostChunked + "\r\n2\r\nhi\r\n0\r\nX-T: v\r\n\r\n",
               {200}, up(kPostChunked, "2\r\nhi\r\n0\r\nX-T: v\r\n\r\n"), nullptr,
               Send::kBytewise});
  // ---- pipelining -----------------------------------------------------------------------------
  c.push_back({"ValidThenRefused", kGet + "\r\nGET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
               {200, 400}, up(kGet), kMalformed});
  c.push_back({"RefusedThenValid", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n" + kGet + "\r\n", {400}, "",
               kMalformed});
  c.push_back({"ObsFoldThenValid", getWith("X-A: a\r\n b") + kGet + "\r\n", {400}, "", kMalformed});
  c.push_back({"Http10TeThenValid",
               "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + kGet +
                   "\r\n",
               {400}, "", kMalformed});
  c.push_back({"ThreeValid", kGet + "\r\n" + kGet + "\r\n" + kGet + "\r\n", {200, 200, 200},
               up(kGet) + up(kGet) + up(kGet)});
  c.push_back({"LengthBodyThenValid",
               "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" + kGet + "\r\n",
               {200, 200},
               up("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n", "hello") + up(kGet)});
  c.push_back({"ChunkedBodyThenValid", kPostChunked + "\r\n2\r\nhi\r\n0\r\n\r\n" + kGet + "\r\n",
               {200, 200}, up(kPostChunked, "2\r\nhi\r\n0\r\n\r\n") + up(kGet)});
  const std::string smuggled_length = "Content-Length: " + std::to_string(kSmuggled.size()) + "\r\n";
  c.push_back(forwarded("BodyThatLooksLikeARequest",
                        "POST / HTTP/1.1\r\nHost: a\r\n" + smuggled_length + "\r\n" + kSmuggled,
                        up("POST / HTTP/1.1\r\nHost: a\r\n" + smuggled_length, kSmuggled)));
  // ---- half-close -----------------------------------------------------------------------------
  c.push_back({"HalfCloseMidHead", "GET / HTTP/1.1\r\nHo", {}, "", nullptr, Send::kHalfClose});
  c.push_back({"HalfCloseBeforeAnything", "", {}, "", nullptr, Send::kHalfClose});
  c.push_back({"HalfCloseAfterRefused", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", {400}, "", kMalformed,
               Send::kHalfClose});
  // ---- requests that pass ---------------------------------------------------------------------
  c.push_back(forwarded("Http10GetsKeepAliveUpstream", "GET / HTTP/1.0\r\nHost: a\r\n\r\n",
                        up10("GET / HTTP/1.0\r\nHost: a\r\n")));
  c.push_back(forwarded("ExpectContinue",
                        "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"
                        "\r\nhello",
                        up("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                           "Content-Length: 5\r\n",
                           "hello")));
  c.push_back(forwarded("UpgradeRequest",
                        "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
                        "GET /ws HTTP/1.1\r\nHost: a\r\n" + kForwarded +
                            "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n"));
  c.push_back(forwarded("GetWithBody", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
                        up("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n", "hi")));
  return c;
}

}  // namespace lb::test
