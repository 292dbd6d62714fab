// HTTP status codes as lb writes them: the one reason-phrase table, and the short closing
// responses that lb, its admin server and lb-origin answer themselves when they refuse a
// request.
#pragma once

#include <string>
#include <string_view>

namespace lb {

// The reason phrase RFC 9110 §15 gives `status` ("OK", "Bad Gateway"), or "Unknown" for a code
// it does not define (a client must not depend on the phrase, RFC 9112 §4). Static storage;
// any thread.
const char* reasonPhrase(int status) noexcept;

// A complete response that ends the connection: the status line, `Content-Type: text/plain`,
// Content-Length, `Connection: close`, then `extra_headers` (whole lines, each ending "\r\n"),
// and the reason phrase in lower case as the body ("bad gateway\n"). Any thread.
std::string closingResponse(int status, std::string_view extra_headers = {});

}  // namespace lb
