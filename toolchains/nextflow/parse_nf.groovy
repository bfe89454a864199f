// Runs inside the sandbox: Groovy-level parse (to the CONVERSION phase) of each file given.
// usage: groovy parse_nf.groovy FILE...   prints one JSON line per file: {"file", "ok", "error"}
import org.codehaus.groovy.control.CompilationUnit
import org.codehaus.groovy.control.CompilerConfiguration
import org.codehaus.groovy.control.Phases
import org.codehaus.groovy.control.MultipleCompilationErrorsException
import groovy.json.JsonOutput

for (String name : args) {
    def result = [file: name, ok: true, error: ""]
    try {
        def unit = new CompilationUnit(new CompilerConfiguration())
        unit.addSource(name, new File(name).getText("UTF-8"))
        unit.compile(Phases.CONVERSION)
    } catch (MultipleCompilationErrorsException e) {
        def err = e.errorCollector.errors ? e.errorCollector.errors[0] : null
        def msg = err?.hasProperty("cause") && err.cause != null ? err.cause.message : e.message
        result = [file: name, ok: false, error: (msg ?: e.toString()).readLines().find { it.trim() } ?: "parse error"]
    } catch (Throwable e) {
        result = [file: name, ok: false, error: (e.class.simpleName + ": " + (e.message ?: "")).readLines()[0]]
    }
    println(JsonOutput.toJson(result))
}
