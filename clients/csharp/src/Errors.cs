// The exceptions of the idforge client (docs/clients.md, "Errors").
using System;
using System.Collections.Generic;
using System.Linq;

namespace Idforge.Client
{
    /// <summary>
    /// A request the servers refused (a bad tag, a count above the server's limit), or the
    /// client closed. <see cref="Code"/> is the server's error code (<c>not_found</c>,
    /// <c>invalid_argument</c>, <c>out_of_range</c>, ...), <see cref="ServerMessage"/> its
    /// text, <see cref="Server"/> the URL of the server that answered and
    /// <see cref="Status"/> the HTTP status (null for the Redis protocol). Such a request is
    /// never retried on another server: every server would give the same answer.
    /// </summary>
    public class IdforgeException : Exception
    {
        /// <summary>An error with the server's code and text, the server's URL and the HTTP status.</summary>
        public IdforgeException(string code, string serverMessage, string server = null, int? status = null)
            : base(code + ": " + serverMessage + (server != null ? " (from " + server + ")" : ""))
        {
            Code = code;
            ServerMessage = serverMessage;
            Server = server;
            Status = status;
        }

        /// <summary>For subclasses whose <see cref="Exception.Message"/> is the whole text.</summary>
        protected IdforgeException(string message, string code)
            : base(message)
        {
            Code = code;
            ServerMessage = message;
        }

        /// <summary><c>not_found</c>, <c>invalid_argument</c>, <c>out_of_range</c> (the server's),
        /// <c>unavailable</c> (<see cref="IdforgeUnavailableException"/>), <c>closed</c>.</summary>
        public string Code { get; }

        /// <summary>The server's error text (without the code and URL that <see cref="Exception.Message"/> adds).</summary>
        public string ServerMessage { get; }

        /// <summary>The URL of the server that answered, or null.</summary>
        public string Server { get; }

        /// <summary>The HTTP status of the answer, or null (the Redis protocol, or no answer).</summary>
        public int? Status { get; }

        // One failed refill may be reported to several waiting threads: each throws its own.
        internal virtual IdforgeException Copy() => new IdforgeException(Code, ServerMessage, Server, Status);
    }

    /// <summary>One server of an <see cref="IdforgeUnavailableException"/> and why it gave no IDs.</summary>
    public sealed class ServerError
    {
        /// <summary>A server and why it gave no IDs.</summary>
        public ServerError(string url, string error)
        {
            Url = url;
            Error = error;
        }

        /// <summary>The server's URL.</summary>
        public string Url { get; }

        /// <summary><c>failed: connection refused</c>, <c>skipped: backing off 800 ms more after 2
        /// failures in a row (last: ...)</c>, <c>last failed: ...</c> or <c>not tried</c>.</summary>
        public string Error { get; }

        /// <summary><c>URL why</c>, as in the message.</summary>
        public override string ToString() => Url + " " + Error;
    }

    /// <summary>
    /// No server could answer: each failed, timed out or was backing off. <see cref="Servers"/>
    /// lists every server of the client in list order and why; the message says the same.
    /// <see cref="IdforgeException.Code"/> is <c>unavailable</c>.
    /// </summary>
    public sealed class IdforgeUnavailableException : IdforgeException
    {
        readonly ServerError[] servers;

        /// <summary>An error whose message names every server and why.</summary>
        public IdforgeUnavailableException(string message, IEnumerable<ServerError> servers)
            : base(message, "unavailable")
        {
            this.servers = (servers ?? Enumerable.Empty<ServerError>()).ToArray();
        }

        /// <summary>Every server of the client, in list order, and why it gave no IDs.</summary>
        public IReadOnlyList<ServerError> Servers => servers;

        internal override IdforgeException Copy() => new IdforgeUnavailableException(Message, servers);
    }
}
