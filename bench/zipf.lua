-- wrk script: every request names a key drawn from a Zipf distribution over KEYS keys
-- (P(rank i) proportional to 1 / i^S, rank 1 hottest: the law of bench/zipf_load.py), the
-- shape of a cache fleet's traffic (a few hot keys, a long tail).
-- The requests are drawn once per wrk thread (ZIPF_POOL of them, formatted in advance) and
-- sent in a cycle: formatting a request per call made wrk itself the bottleneck at ~25k/s.
-- Each thread seeds with ZIPF_SEED, so every thread cycles through the same pool, and done()
-- can draw it once more to print the true top keys.
-- Env: ZIPF_KEYS (default 10000), ZIPF_S or ZIPF_ALPHA (default 1.0), ZIPF_SEED (default 42),
--      ZIPF_POOL (default 65536),
--      ZIPF_TARGET: "header" (default: GET / with X-Key: key-<i>, as bench/compare.sh
--      sends) or "path" (GET /k/<i>, for a listener hashing the path),
--      ZIPF_TOP: how many of the true top keys done() prints as one JSON line after wrk's
--      report (default 10 with ZIPF_TARGET=path, 0 with header: compare.sh's output as it was).

local keys = tonumber(os.getenv("ZIPF_KEYS") or "10000")
local s = tonumber(os.getenv("ZIPF_S") or os.getenv("ZIPF_ALPHA") or "1.0")
local seed = tonumber(os.getenv("ZIPF_SEED") or "42")
local target = os.getenv("ZIPF_TARGET") or "header"
local cdf = {}

local function build()
  local total = 0
  for i = 1, keys do
    total = total + 1 / (i ^ s)
    cdf[i] = total
  end
  for i = 1, keys do cdf[i] = cdf[i] / total end
end

-- The first rank whose cumulative probability reaches u: binary search over the CDF.
local function draw()
  local u = math.random()
  local lo, hi = 1, keys
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return lo
end

local function keyName(rank)
  if target == "path" then return "/k/" .. rank end
  return "key-" .. rank
end

-- The ranks of one pool, in sending order.
local function drawPool(n)
  build()
  math.randomseed(seed)
  local ranks = {}
  for k = 1, n do ranks[k] = draw() end
  return ranks
end

local pool = {}
local n = 0
local i = 0

function init(args)
  if target ~= "header" and target ~= "path" then
    error("ZIPF_TARGET must be header or path, got " .. target)
  end
  n = tonumber(os.getenv("ZIPF_POOL") or "65536")
  local ranks = drawPool(n)
  for k = 1, n do
    if target == "path" then
      pool[k] = wrk.format("GET", keyName(ranks[k]))
    else
      -- wrk.format takes these headers instead of wrk's own, so -H ones are copied in.
      local h = { ["X-Key"] = keyName(ranks[k]) }
      for name, value in pairs(wrk.headers) do h[name] = value end
      pool[k] = wrk.format("GET", "/", h)
    end
  end
end

function request()
  i = i % n + 1
  return pool[i]
end

-- The true top keys of what was sent: each thread cycled the same pool, so a key's share of
-- the pool is its share of the requests (closely once each thread has sent a few pools;
-- a run shorter than one pool sends only its first part, and the figures are estimates).
function done(summary, latency, requests)
  local top = tonumber(os.getenv("ZIPF_TOP") or (target == "path" and "10" or "0"))
  if top <= 0 then return end
  local size = tonumber(os.getenv("ZIPF_POOL") or "65536")
  local counts = {}
  for _, r in ipairs(drawPool(size)) do counts[r] = (counts[r] or 0) + 1 end
  local ranked = {}
  for r, c in pairs(counts) do ranked[#ranked + 1] = { rank = r, count = c } end
  table.sort(ranked, function(a, b)
    if a.count ~= b.count then return a.count > b.count end
    return a.rank < b.rank
  end)
  local seconds = summary.duration / 1e6
  local parts = {}
  for k = 1, math.min(top, #ranked) do
    local share = ranked[k].count / size
    parts[#parts + 1] = string.format(
        '{"rank": %d, "key": "%s", "requests": %d, "rps": %.1f, "share": %.6f}', k,
        keyName(ranked[k].rank), math.floor(share * summary.requests + 0.5),
        share * summary.requests / seconds, share)
  end
  io.write(string.format('{"keys": %d, "alpha": %g, "requests": %d, "duration_s": %.3f, ' ..
                         '"rps": %.1f, "top": [%s]}\n', keys, s, summary.requests, seconds,
                         summary.requests / seconds, table.concat(parts, ", ")))
end
