-- wrk script: every request carries an X-Key drawn from a Zipf distribution over KEYS keys
-- (exponent S), the shape of a cache fleet's traffic (a few hot keys, a long tail).
-- The requests are drawn once per wrk thread (ZIPF_POOL of them, formatted in advance) and
-- sent in a cycle: formatting a request per call made wrk itself the bottleneck at ~25k/s.
-- Env: ZIPF_KEYS (default 10000), ZIPF_S (default 1.0), ZIPF_SEED (default 42),
--      ZIPF_POOL (default 65536).

local keys = tonumber(os.getenv("ZIPF_KEYS") or "10000")
local s = tonumber(os.getenv("ZIPF_S") or "1.0")
local cdf = {}

local function build()
  local total = 0
  for i = 1, keys do
    total = total + 1 / (i ^ s)
    cdf[i] = total
  end
  for i = 1, keys do cdf[i] = cdf[i] / total end
end

local function draw()
  local u = math.random()
  local lo, hi = 1, keys
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return lo
end

local pool = {}
local n = 0
local i = 0

function init(args)
  build()
  math.randomseed(tonumber(os.getenv("ZIPF_SEED") or "42"))
  n = tonumber(os.getenv("ZIPF_POOL") or "65536")
  for k = 1, n do pool[k] = wrk.format("GET", "/", { ["X-Key"] = "key-" .. draw() }) end
end

function request()
  i = i % n + 1
  return pool[i]
end
