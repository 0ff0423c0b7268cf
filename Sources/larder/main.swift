#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import LarderCLI

exit(LarderCommand.run(arguments: CommandLine.arguments, io: .standard))
