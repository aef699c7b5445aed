// The options of a Client (docs/clients.md, "The behaviour").
namespace Idforge.Client
{
    /// <summary>The options of a <see cref="Client"/>; every one has the default of docs/clients.md.</summary>
    public sealed class ClientOptions
    {
        /// <summary>One request, connect to last byte (<c>timeout_ms</c>). At least 1.</summary>
        public int TimeoutMs { get; set; } = 1000;

        /// <summary>IDs per request (<c>batch</c>); at most the server's <c>limits.max_count</c>
        /// (else <see cref="IdforgeException"/> <c>out_of_range</c>).</summary>
        public int Batch { get; set; } = 256;

        /// <summary>A background refill starts when fewer IDs are left (<c>refill_below</c>,
        /// 0..<see cref="Batch"/>; null: half a batch; 0: only when the buffer is empty).</summary>
        public int? RefillBelow { get; set; }

        /// <summary>Snowflake, UUIDv7 and ULID IDs fetched longer ago are dropped (<c>max_age_ms</c>; 0: no limit).</summary>
        public int MaxAgeMs { get; set; } = 2000;

        /// <summary>The same for segment IDs (<c>segment_max_age_ms</c>; 0: no limit).</summary>
        public int SegmentMaxAgeMs { get; set; }

        /// <summary>A failed server is skipped this long after its first failure (<c>backoff_ms</c>),
        /// doubling with each failure in a row up to <see cref="MaxBackoffMs"/>.</summary>
        public int BackoffMs { get; set; } = 500;

        /// <summary>The longest back-off (<c>max_backoff_ms</c>), at least <see cref="BackoffMs"/>.</summary>
        public int MaxBackoffMs { get; set; } = 30000;

        /// <summary>false (or a <see cref="Batch"/> of 1): each call is one request (<c>buffer</c>).</summary>
        public bool Buffer { get; set; } = true;
    }
}
