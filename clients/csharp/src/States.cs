// What a client shows of itself: the kinds of ID it issues and the state of each server and
// buffer (Client.ServerStates, Client.BufferStates).
using System;

namespace Idforge.Client
{
    /// <summary>The kinds of ID a server issues.</summary>
    public enum IdKind
    {
        /// <summary>64-bit time-ordered IDs (<see cref="Client.NextSnowflake"/>).</summary>
        Snowflake,

        /// <summary>Numbers of a tag's counter (<see cref="Client.NextSegment"/>).</summary>
        Segment,

        /// <summary>UUIDv7 text (<see cref="Client.NextUuid7"/>).</summary>
        Uuid7,

        /// <summary>ULID text (<see cref="Client.NextUlid"/>).</summary>
        Ulid,
    }

    /// <summary>One server's failover state, from <see cref="Client.ServerStates"/>.</summary>
    public sealed class ServerState
    {
        internal ServerState(string url, int failures, long backingOffMs, string lastError, bool current)
        {
            Url = url;
            Failures = failures;
            BackingOffMs = backingOffMs;
            LastError = lastError;
            Current = current;
        }

        /// <summary>The server's URL.</summary>
        public string Url { get; }

        /// <summary>Failures in a row (0 after a success).</summary>
        public int Failures { get; }

        /// <summary>Milliseconds of back-off left (0: it is tried).</summary>
        public long BackingOffMs { get; }

        /// <summary>Why it failed last ("" once it answered).</summary>
        public string LastError { get; }

        /// <summary>It answered last: requests start with it.</summary>
        public bool Current { get; }
    }

    /// <summary>One buffer's state, from <see cref="Client.BufferStates"/>.</summary>
    public sealed class BufferState
    {
        internal BufferState(IdKind kind, string tag, int size, long dropped, long refills, string lastError)
        {
            Kind = kind;
            Tag = tag;
            Size = size;
            Dropped = dropped;
            Refills = refills;
            LastError = lastError;
        }

        /// <summary>The kind of its IDs.</summary>
        public IdKind Kind { get; }

        /// <summary>The segment tag, or null.</summary>
        public string Tag { get; }

        /// <summary>IDs held now.</summary>
        public int Size { get; }

        /// <summary>IDs dropped by the age limit.</summary>
        public long Dropped { get; }

        /// <summary>Refills that brought IDs.</summary>
        public long Refills { get; }

        /// <summary>The error of the last refill, or null if it worked.</summary>
        public string LastError { get; }
    }
}
