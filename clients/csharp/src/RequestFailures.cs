// What every request of the client shares: the clock it measures deadlines with and the
// failures a request can end in (the wire itself: Connection.cs and Server.cs).
using System;
using System.Diagnostics;

namespace Idforge.Client
{
    internal static class Clock
    {
        static readonly double MsPerTick = 1000.0 / Stopwatch.Frequency;

        /// <summary>Monotonic milliseconds.</summary>
        public static double NowMs => Stopwatch.GetTimestamp() * MsPerTick;
    }

    /// <summary>The server did not answer usefully: try another one.</summary>
    internal sealed class ServerFailure : Exception
    {
        public ServerFailure(string reason) : base(reason) { }
    }

    /// <summary>The request's deadline passed.</summary>
    internal sealed class DeadlinePassed : Exception
    {
    }

    /// <summary>The server closed the connection (end of stream).</summary>
    internal sealed class ClosedByServer : Exception
    {
    }
}
