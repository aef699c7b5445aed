// The assembly's name and version (the SDK project leaves these to this file).
using System.Reflection;

[assembly: AssemblyTitle("Idforge.Client")]
[assembly: AssemblyDescription("Client of idforge: IDs from a list of servers with failover and a local buffer, and Snowflake decoding without a server.")]
[assembly: AssemblyVersion("0.1.0.0")]
[assembly: AssemblyInformationalVersion("0.1.0")]
