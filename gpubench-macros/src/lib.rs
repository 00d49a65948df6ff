//! `#[gpu_bench]`: registers a benchmark function with the gpubench harness.
//!
//! The generated code refers only to `::gpubench_core::__private`, so users' code
//! never depends on the runtime's internals by accident.
#![warn(missing_docs)]

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ItemFn, LitStr, Token, Type};

use gpubench_record::id::id_part_problem;

/// Marks `fn name(b: &mut Bencher)` as a benchmark, or, with `args = [..]`,
/// `fn name(b: &mut Bencher, arg: T)` as one benchmark per argument (`name/arg`).
///
/// Options: `args = [a, b, ...]` (each must implement `Display + Clone`),
/// `name = "..."` (the id; default: the function name), `ignore` (runs only with
/// `--ignored`), `capacity = "unit"` (with `args`: the argument is a size, say a
/// batch, and `cargo gpubench capacity` finds the largest that fits in device
/// memory, starting from the first `args` value; the argument's type takes a
/// `u64` through `TryFrom`).
#[proc_macro_attribute]
pub fn gpu_bench(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item2: TokenStream2 = item.clone().into();
    let options = match syn::parse::<Options>(attr) {
        Ok(o) => o,
        Err(e) => return with_original(e, item2),
    };
    let func = match syn::parse::<ItemFn>(item) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "#[gpu_bench] goes on a function: `fn name(b: &mut Bencher)`",
            );
            return with_original(e, item2);
        }
    };
    match expand(&options, &func) {
        Ok(tokens) => tokens.into(),
        Err(e) => with_original(e, item2),
    }
}

/// The error plus the item unchanged, so the user sees one error, not a cascade.
fn with_original(e: syn::Error, item: TokenStream2) -> TokenStream {
    let err = e.to_compile_error();
    quote!(#err #item).into()
}

#[derive(Default)]
struct Options {
    args: Option<Vec<Expr>>,
    name: Option<LitStr>,
    ignore: bool,
    capacity: Option<LitStr>,
}

impl Parse for Options {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut opts = Options::default();
        while !input.is_empty() {
            let key: syn::Ident = input.parse()?;
            match key.to_string().as_str() {
                "ignore" => opts.ignore = true,
                "capacity" => {
                    input.parse::<Token![=]>()?;
                    let unit: LitStr = input.parse()?;
                    if unit.value().trim().is_empty() {
                        return Err(syn::Error::new(
                            unit.span(),
                            "#[gpu_bench(capacity = \"...\")] names what the size counts, e.g. \"batch\"",
                        ));
                    }
                    opts.capacity = Some(unit);
                }
                "name" => {
                    input.parse::<Token![=]>()?;
                    let name: LitStr = input.parse()?;
                    if let Some(why) = id_part_problem(&name.value()) {
                        return Err(syn::Error::new(
                            name.span(),
                            format!("#[gpu_bench(name = ...)] {why}"),
                        ));
                    }
                    opts.name = Some(name);
                }
                "args" => {
                    input.parse::<Token![=]>()?;
                    let content;
                    syn::bracketed!(content in input);
                    let list: Punctuated<Expr, Token![,]> =
                        content.parse_terminated(Expr::parse, Token![,])?;
                    if list.is_empty() {
                        return Err(syn::Error::new(
                            key.span(),
                            "#[gpu_bench(args = [...])] needs at least one argument",
                        ));
                    }
                    // String arguments become part of the id as written; other values
                    // are checked when the benchmarks are listed.
                    for arg in &list {
                        if let Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(text),
                            ..
                        }) = arg
                        {
                            if let Some(why) = id_part_problem(&text.value()) {
                                return Err(syn::Error::new(
                                    text.span(),
                                    format!("a #[gpu_bench(args = [...])] value {why}"),
                                ));
                            }
                        }
                    }
                    opts.args = Some(list.into_iter().collect());
                }
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown #[gpu_bench] option `{other}`: expected `args = [...]`, `name = \"...\"`, `capacity = \"...\"` or `ignore`"
                        ),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(opts)
    }
}

/// Whether `ty` is `&mut Bencher` (any path ending in `Bencher`).
fn is_bencher_ref(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) if r.mutability.is_some() => match &*r.elem {
            Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Bencher"),
            _ => false,
        },
        _ => false,
    }
}

fn expand(options: &Options, func: &ItemFn) -> syn::Result<TokenStream2> {
    let sig = &func.sig;
    if sig.asyncness.is_some() {
        return Err(syn::Error::new(
            sig.asyncness.span(),
            "#[gpu_bench] functions cannot be async: time the blocking call instead",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[gpu_bench] functions cannot be generic: use `args = [...]` for variants",
        ));
    }
    if let syn::ReturnType::Type(_, ty) = &sig.output {
        return Err(syn::Error::new(
            ty.span(),
            "#[gpu_bench] functions return nothing: the Bencher records the result",
        ));
    }
    let inputs: Vec<&FnArg> = sig.inputs.iter().collect();
    let first_ok = match inputs.first() {
        Some(FnArg::Typed(pt)) => is_bencher_ref(&pt.ty),
        _ => false,
    };
    if !first_ok {
        let span = inputs.first().map_or(sig.ident.span(), |a| a.span());
        return Err(syn::Error::new(
            span,
            "#[gpu_bench] functions take `b: &mut Bencher` as their first argument",
        ));
    }
    if let (Some(unit), None) = (&options.capacity, &options.args) {
        return Err(syn::Error::new(
            unit.span(),
            "#[gpu_bench(capacity = \"...\")] needs `args = [...]`: the sizes a run measures, the first of which the capacity search starts from",
        ));
    }
    let expected = if options.args.is_some() { 2 } else { 1 };
    if inputs.len() != expected {
        let msg = if options.args.is_some() {
            "#[gpu_bench(args = [...])] functions take exactly two arguments: `b: &mut Bencher` and the argument"
        } else if inputs.len() == 2 {
            "this #[gpu_bench] function takes an argument: list its values with `#[gpu_bench(args = [...])]`"
        } else {
            "#[gpu_bench] functions take exactly one argument, `b: &mut Bencher`"
        };
        return Err(syn::Error::new(sig.inputs.span(), msg));
    }

    let ident = &sig.ident;
    let name = options
        .name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_string());
    let ignore = options.ignore;
    let cases_fn = format_ident!("__gpubench_cases_{}", ident);
    let private = quote!(::gpubench_core::__private);
    let body = match &options.args {
        None => quote! {
            ::std::vec![#private::CaseFn::plain(|b: &mut #private::Bencher| #ident(b))]
        },
        Some(args) => {
            let pushes = args.iter().map(|arg| {
                quote_spanned! {arg.span()=>
                    {
                        let __arg = #arg;
                        let __label = #private::arg_label(&__arg);
                        __cases.push(#private::CaseFn::with_arg(
                            __label,
                            move |b: &mut #private::Bencher| {
                                #ident(b, ::std::clone::Clone::clone(&__arg))
                            },
                        ));
                    }
                }
            });
            quote! {
                let mut __cases = ::std::vec::Vec::new();
                #(#pushes)*
                __cases
            }
        }
    };
    let capacity = options.capacity.as_ref().map(|unit| {
        let probe_fn = format_ident!("__gpubench_capacity_{}", ident);
        quote! {
            #[doc(hidden)]
            #[allow(non_snake_case)]
            fn #probe_fn(__size: u64) -> #private::CaseFn {
                #private::CaseFn::with_arg(
                    ::std::string::ToString::to_string(&__size),
                    move |b: &mut #private::Bencher| {
                        let __arg = ::std::convert::TryFrom::try_from(__size)
                            .expect("the capacity size does not fit the benchmark's argument type");
                        #ident(b, __arg)
                    },
                )
            }

            #private::inventory::submit! {
                #private::CapacityDef {
                    name: #name,
                    unit: #unit,
                    probe: #probe_fn,
                }
            }
        }
    });
    Ok(quote! {
        #func

        #capacity

        #[doc(hidden)]
        #[allow(non_snake_case)]
        fn #cases_fn() -> ::std::vec::Vec<#private::CaseFn> {
            #body
        }

        #private::inventory::submit! {
            #private::BenchDef {
                name: #name,
                file: ::std::file!(),
                line: ::std::line!(),
                ignore: #ignore,
                cases: #cases_fn,
            }
        }
    })
}
