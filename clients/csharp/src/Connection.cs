// One kept-alive socket to a server, with a read buffer: every wait is bounded by what is
// left of the request's deadline (connect, send and the whole answer).
using System;
using System.IO;
using System.Net;
using System.Net.Sockets;

namespace Idforge.Client
{
    /// <summary>A socket with a read buffer; every operation checks the request's deadline.</summary>
    internal sealed class Connection : IDisposable
    {
        const int MaxAnswerBytes = 16 * 1024 * 1024;
        readonly Socket socket;
        byte[] buffer = new byte[8192];
        int start, end;

        public bool Used; // has answered a request before (kept alive)
        public bool GotBytes; // bytes of the current answer arrived
        public bool Reusable = true; // false once the server said it closes the connection

        Connection(Socket socket)
        {
            this.socket = socket;
        }

        public bool HasUnreadBytes => end > start;

        public static Connection Open(ServerUrl url, double deadline)
        {
            IPAddress[] addresses;
            IPAddress literal;
            if (IPAddress.TryParse(url.Host, out literal)) addresses = new[] { literal };
            else
            {
                IAsyncResult lookup = Dns.BeginGetHostAddresses(url.Host, null, null);
                if (!lookup.AsyncWaitHandle.WaitOne(TimeLeft(deadline))) throw new DeadlinePassed();
                addresses = Dns.EndGetHostAddresses(lookup);
                if (addresses.Length == 0) throw new SocketException((int)SocketError.HostNotFound);
            }
            Exception last = null;
            foreach (IPAddress address in addresses)
            {
                var socket = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
                try
                {
                    socket.NoDelay = true;
                    IAsyncResult connect = socket.BeginConnect(new IPEndPoint(address, url.Port), null, null);
                    if (!connect.AsyncWaitHandle.WaitOne(TimeLeft(deadline)))
                    {
                        socket.Close();
                        throw new DeadlinePassed();
                    }
                    socket.EndConnect(connect);
                    return new Connection(socket);
                }
                catch (SocketException e)
                {
                    socket.Close();
                    last = e;
                }
            }
            throw last ?? new SocketException((int)SocketError.HostNotFound);
        }

        static int TimeLeft(double deadline)
        {
            double left = deadline - Clock.NowMs;
            if (left <= 0) throw new DeadlinePassed();
            return (int)Math.Min(Math.Ceiling(left), int.MaxValue);
        }

        /// <summary>An idle connection that is readable has been closed by the server (or
        /// holds bytes nobody asked for): it cannot carry a request.</summary>
        public bool LooksClosed()
        {
            try
            {
                return socket.Poll(0, SelectMode.SelectRead);
            }
            catch (Exception)
            {
                return true;
            }
        }

        public void Dispose()
        {
            try
            {
                socket.Close();
            }
            catch (Exception)
            {
                // closing is best effort
            }
        }

        public void Send(byte[] data, double deadline)
        {
            int sent = 0;
            while (sent < data.Length)
            {
                int left = TimeLeft(deadline);
                if (!socket.Poll((int)Math.Min(left * 1000L, int.MaxValue), SelectMode.SelectWrite)) throw new DeadlinePassed();
                sent += socket.Send(data, sent, data.Length - sent, SocketFlags.None);
            }
        }

        // More bytes into the buffer, or DeadlinePassed / ClosedByServer.
        void Fill(double deadline)
        {
            int left = TimeLeft(deadline);
            if (!socket.Poll((int)Math.Min(left * 1000L, int.MaxValue), SelectMode.SelectRead)) throw new DeadlinePassed();
            if (start > 0 && start == end) start = end = 0;
            if (end == buffer.Length)
            {
                if (start > 0)
                {
                    Buffer.BlockCopy(buffer, start, buffer, 0, end - start);
                    end -= start;
                    start = 0;
                }
                else
                {
                    if (buffer.Length >= MaxAnswerBytes) throw new ServerFailure("the answer is too large");
                    Array.Resize(ref buffer, buffer.Length * 2);
                }
            }
            int n = socket.Receive(buffer, end, buffer.Length - end, SocketFlags.None);
            if (n == 0) throw new ClosedByServer();
            GotBytes = true;
            end += n;
        }

        /// <summary>One line without its CRLF, as Latin-1 text (bytes as chars).</summary>
        public string ReadLine(double deadline, int limit)
        {
            int offset;
            int length = ReadLineRange(deadline, limit, out offset);
            return Latin1(buffer, offset, length);
        }

        /// <summary>The read buffer: <see cref="ReadLineRange"/>'s bytes until the next read.</summary>
        public byte[] Bytes => buffer;

        /// <summary>One line without its CRLF: its length, and its offset in <see cref="Bytes"/>.</summary>
        public int ReadLineRange(double deadline, int limit, out int offset)
        {
            int scanned = 0; // bytes after start already looked at (Fill may move start)
            while (true)
            {
                for (int i = start + Math.Max(scanned, 1); i < end; i++)
                {
                    if (buffer[i] == '\n' && buffer[i - 1] == '\r')
                    {
                        offset = start;
                        start = i + 1;
                        return i - 1 - offset;
                    }
                }
                scanned = end - start;
                if (scanned > limit) throw new ServerFailure("an answer line is too long");
                Fill(deadline);
            }
        }

        public static string Latin1(byte[] bytes, int offset, int count)
        {
            var chars = new char[count];
            for (int i = 0; i < count; i++) chars[i] = (char)bytes[offset + i];
            return new string(chars);
        }

        public byte[] ReadExact(int n, double deadline)
        {
            while (end - start < n) Fill(deadline);
            var data = new byte[n];
            Buffer.BlockCopy(buffer, start, data, 0, n);
            start += n;
            return data;
        }

        public byte[] ReadToEnd(double deadline)
        {
            while (true)
            {
                try
                {
                    Fill(deadline);
                }
                catch (ClosedByServer)
                {
                    var data = new byte[end - start];
                    Buffer.BlockCopy(buffer, start, data, 0, data.Length);
                    start = end;
                    return data;
                }
            }
        }
    }
}
